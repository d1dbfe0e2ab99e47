//! A command's output as the agent gets it: the first and the last half of the limit, the middle dropped and
//! counted. Memory stays at the limit however much the command prints.

use std::collections::VecDeque;

/// The most output read from one command before it is killed, for a given limit: 64 times what is kept, at
/// least 16 MiB (a long build log passes with its middle dropped) and at most 256 MiB (reading that from a
/// pipe takes well under a second, so an output without end is stopped promptly).
pub(super) fn output_ceiling(output_limit: usize) -> u64 {
    const MIN: u64 = 16 << 20;
    const MAX: u64 = 256 << 20;
    u64::try_from(output_limit)
        .unwrap_or(u64::MAX)
        .saturating_mul(64)
        .clamp(MIN, MAX)
}

/// The first `limit / 2` bytes and the last `limit - limit / 2` bytes of everything pushed.
pub(super) struct OutputCapture {
    limit: usize,
    head: Vec<u8>,
    head_capacity: usize,
    tail: VecDeque<u8>,
    tail_capacity: usize,
    /// Bytes that went neither into the head nor stayed in the tail.
    dropped: u64,
    /// Bytes the command wrote.
    total: u64,
}

impl OutputCapture {
    pub(super) fn new(limit: usize) -> Self {
        let head_capacity = limit / 2;
        let tail_capacity = limit - head_capacity;
        Self {
            limit,
            head: Vec::with_capacity(head_capacity.min(1 << 20)),
            head_capacity,
            tail: VecDeque::new(),
            tail_capacity,
            dropped: 0,
            total: 0,
        }
    }

    /// Bytes the command wrote so far.
    pub(super) fn total(&self) -> u64 {
        self.total
    }

    pub(super) fn push(&mut self, bytes: &[u8]) {
        self.total = self.total.saturating_add(bytes.len() as u64);
        self.keep(bytes);
    }

    /// The kept output as text, and how many bytes of it are not shown. `note` (ours, not the command's) ends
    /// the text, taking the place of the command's last bytes.
    pub(super) fn finish(mut self, note: Option<&str>) -> (String, u64) {
        if let Some(note) = note {
            self.keep(note.as_bytes());
        }
        let mut omitted = self.dropped;
        let mut text = if omitted == 0 {
            // Nothing dropped: head and tail are one run of bytes, converted together so a character split
            // between them stays whole.
            let mut bytes = self.head;
            bytes.extend(self.tail);
            String::from_utf8_lossy(&bytes).into_owned()
        } else {
            // A character cut by the dropped middle is dropped with it, instead of showing as a replacement.
            let (head, cut_at_end) = trim_partial_end(&self.head);
            let tail = Vec::from(self.tail);
            let (tail, cut_at_start) = trim_partial_start(&tail);
            omitted += (cut_at_end + cut_at_start) as u64;
            let mut text = String::from_utf8_lossy(head).into_owned();
            text.push_str(&String::from_utf8_lossy(tail));
            text
        };
        // Invalid bytes become U+FFFD (three bytes each), which can push binary output over the limit: cut
        // the end off and count it.
        if text.len() > self.limit {
            let cut = text.floor_char_boundary(self.limit);
            omitted += (text.len() - cut) as u64;
            text.truncate(cut);
        }
        (text, omitted)
    }

    fn keep(&mut self, mut bytes: &[u8]) {
        let head_room = self.head_capacity - self.head.len();
        if head_room > 0 {
            let taken = head_room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..taken]);
            bytes = &bytes[taken..];
        }
        if bytes.is_empty() {
            return;
        }
        if bytes.len() >= self.tail_capacity {
            self.dropped += (self.tail.len() + bytes.len() - self.tail_capacity) as u64;
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_capacity..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_capacity);
        self.tail.drain(..overflow);
        self.dropped += overflow as u64;
        self.tail.extend(bytes);
    }
}

/// `bytes` without an incomplete UTF-8 sequence at its end, and how many bytes that removed.
fn trim_partial_end(bytes: &[u8]) -> (&[u8], usize) {
    match std::str::from_utf8(bytes) {
        Err(error) if error.error_len().is_none() => (&bytes[..error.valid_up_to()], bytes.len() - error.valid_up_to()),
        _ => (bytes, 0),
    }
}

/// `bytes` without UTF-8 continuation bytes at its start (the rest of a character cut off before it), and
/// how many bytes that removed. A character is at most four bytes, so at most three are removed.
fn trim_partial_start(bytes: &[u8]) -> (&[u8], usize) {
    let continuation = bytes
        .iter()
        .take(3)
        .take_while(|byte| (**byte & 0b1100_0000) == 0b1000_0000)
        .count();
    (&bytes[continuation..], continuation)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(limit: usize, chunks: &[&[u8]]) -> (String, u64) {
        let mut capture = OutputCapture::new(limit);
        for chunk in chunks {
            capture.push(chunk);
        }
        capture.finish(None)
    }

    #[test]
    fn keeps_everything_within_the_limit() {
        assert_eq!(capture(10, &[b"abc", b"defg"]), ("abcdefg".to_owned(), 0));
        assert_eq!(capture(10, &[b"0123456789"]), ("0123456789".to_owned(), 0));
        assert_eq!(capture(0, &[]), (String::new(), 0));
    }

    #[test]
    fn keeps_the_first_and_last_halves_and_counts_the_middle() {
        assert_eq!(capture(6, &[b"abcdefghij"]), ("abchij".to_owned(), 4));
        assert_eq!(
            capture(6, &[b"ab", b"cd", b"ef", b"gh", b"ij"]),
            ("abchij".to_owned(), 4)
        );
        assert_eq!(capture(5, &[b"a", b"bcdefghijklmnop"]), ("abnop".to_owned(), 11));
        assert_eq!(capture(0, &[b"abc"]), (String::new(), 3));
    }

    #[test]
    fn counts_every_byte_of_a_large_output_in_bounded_memory() {
        let mut capture = OutputCapture::new(100);
        let chunk = [b'x'; 65536];
        for _ in 0..1000 {
            capture.push(&chunk);
        }
        assert_eq!(capture.total(), 65_536_000);
        let (text, omitted) = capture.finish(None);
        assert_eq!(text.len(), 100);
        assert_eq!(omitted, 65_536_000 - 100);
    }

    #[test]
    fn drops_characters_cut_by_the_middle_instead_of_garbling_them() {
        // "é" is two bytes: the head ends inside one and the tail starts inside another.
        let (text, omitted) = capture(6, &["aaé".as_bytes(), b"zzzzzzz", "éb".as_bytes()]);
        assert!(!text.contains('\u{fffd}'), "{text:?}");
        assert_eq!(text.len() as u64 + omitted, 4 + 7 + 3);
        assert!(text.starts_with("aa") && text.ends_with('b'), "{text:?}");
    }

    #[test]
    fn binary_output_stays_within_the_limit() {
        let (text, omitted) = capture(8, &[&[0xff; 8]]);
        assert!(text.len() <= 8, "{text:?}");
        assert!(omitted > 0);
    }

    #[test]
    fn a_note_ends_the_text() {
        let mut capture = OutputCapture::new(20);
        capture.push(&[b'x'; 100]);
        let (text, omitted) = capture.finish(Some("[stopped]"));
        assert!(text.ends_with("[stopped]"), "{text:?}");
        assert_eq!(text.len(), 20);
        assert_eq!(omitted, 100 - 11);
    }

    #[test]
    fn the_ceiling_grows_with_the_limit_within_bounds() {
        assert_eq!(output_ceiling(0), 16 << 20);
        assert_eq!(output_ceiling(1 << 20), 64 << 20);
        assert_eq!(output_ceiling(usize::MAX), 256 << 20);
    }
}
