//! Deterministic pseudo-random data: SplitMix64 from a fixed seed per server, so every run (and every grader)
//! sees the same objects.

pub(crate) struct Seed(u64);

impl Seed {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` > 0).
    pub(crate) fn below(&mut self, bound: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(bound.max(1)).unwrap_or(u64::MAX)).unwrap_or(0)
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// From `least` to `least + spread - 1` words of filler prose.
    pub(crate) fn prose_between(&mut self, least: usize, spread: usize) -> String {
        let words = least + self.below(spread);
        self.prose(words)
    }

    /// `words` words of filler prose from a small vocabulary.
    pub(crate) fn prose(&mut self, words: usize) -> String {
        const VOCABULARY: [&str; 24] = [
            "the",
            "service",
            "customer",
            "rollout",
            "latency",
            "review",
            "team",
            "migration",
            "request",
            "update",
            "release",
            "policy",
            "budget",
            "quarter",
            "report",
            "incident",
            "dashboard",
            "contract",
            "renewal",
            "ticket",
            "process",
            "owner",
            "deadline",
            "metric",
        ];
        let mut text = String::new();
        for index in 0..words {
            if index > 0 {
                text.push(' ');
            }
            let word = *self.pick(&VOCABULARY);
            text.push_str(word);
        }
        text
    }
}

/// People the servers' objects are assigned to.
pub(crate) const PEOPLE: [&str; 20] = [
    "Ada Park",
    "Ben Okafor",
    "Chloe Martin",
    "Dev Shah",
    "Elena Rossi",
    "Farid Haddad",
    "Grace Liu",
    "Hugo Silva",
    "Ines Costa",
    "Jonas Berg",
    "Kira Tanaka",
    "Liam Walsh",
    "Maya Cohen",
    "Nils Eriksen",
    "Olga Petrova",
    "Paul Dubois",
    "Quinn Harper",
    "Rosa Alvarez",
    "Sami Nieminen",
    "Tara Singh",
];
