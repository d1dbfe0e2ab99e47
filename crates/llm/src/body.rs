//! What the four adapters share to write a request body straight from the borrowed [`ModelRequest`]: the
//! body is serialised once into the bytes the client sends, with no `serde_json::Value` copy of the
//! conversation in between. A call at the end of a long conversation then costs one pass over it, where a
//! tree would copy every string into it, serialise it and free it again on every model call.
//!
//! [`ModelRequest`]: crate::request::ModelRequest

use std::fmt;

use bytes::Bytes;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::error::LlmError;
use crate::request::{MediaSource, Message, SerialisedMessages};
use crate::wire::WireApi;

/// Serialises a body into the bytes of an [`HttpRequest`](crate::wire::HttpRequest).
pub(crate) fn json_body(body: &impl Serialize) -> Result<Bytes, LlmError> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(|error| LlmError::InvalidRequest(format!("the request body is not JSON: {error}")))
}

/// Appends `value`'s JSON to `out`.
pub(crate) fn write_json(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) -> Result<(), LlmError> {
    serde_json::to_writer(out, value)
        .map_err(|error| LlmError::InvalidRequest(format!("the request body is not JSON: {error}")))
}

/// Ends a body whose first fields were written into `out` by hand: `rest`'s fields (an object) follow
/// them, and the object is closed.
pub(crate) fn finish_body(mut out: Vec<u8>, rest: &impl Serialize) -> Result<Bytes, LlmError> {
    let rest = json_body(rest)?;
    match rest.get(1..) {
        // `{}`: nothing to add.
        Some(b"}") | None => out.push(b'}'),
        Some(fields) => {
            out.push(b',');
            out.extend_from_slice(fields);
        }
    }
    Ok(Bytes::from(out))
}

/// The elements of a JSON array, written one by one with their separating commas.
pub(crate) struct ArrayWriter<'o> {
    out: &'o mut Vec<u8>,
    empty: bool,
}

impl<'o> ArrayWriter<'o> {
    /// An array whose `[` is already in `out`.
    pub(crate) fn new(out: &'o mut Vec<u8>) -> Self {
        Self { out, empty: true }
    }

    pub(crate) fn element(&mut self, value: &impl Serialize) -> Result<(), LlmError> {
        self.separate();
        write_json(self.out, value)
    }

    /// Elements already written as JSON, joined by commas.
    fn raw(&mut self, json: &[u8]) {
        self.separate();
        self.out.extend_from_slice(json);
    }

    fn separate(&mut self) {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
    }
}

/// How an adapter writes a conversation's messages as the elements of its message array.
pub(crate) trait MessageElements<'r> {
    /// Writes what earlier messages held back and must come before `message`. True when nothing is held
    /// back after that: a request starting at `message` would write the same bytes from here on.
    fn before(&mut self, array: &mut ArrayWriter<'_>, message: &'r Message) -> Result<bool, LlmError>;

    /// Writes the elements of `message` (it may hold some back, see [`before`](Self::before)).
    fn write(&mut self, array: &mut ArrayWriter<'_>, message: &'r Message) -> Result<(), LlmError>;

    /// True when nothing is held back after the last message.
    fn nothing_held(&self) -> bool;

    /// Writes what is held back at the end.
    fn end(&mut self, array: &mut ArrayWriter<'_>) -> Result<(), LlmError>;
}

/// Bytes reserved past the cached messages for what a body adds after them.
const BODY_TAIL_ROOM: usize = 64 * 1024;

/// Writes `messages` into `array`: their first ones copied from `cache` when it holds them for `wire`, the
/// others through `elements`. The cache then takes every message written, up to the last point a later
/// request (the same messages and more after them) cannot write differently.
pub(crate) fn write_messages<'r>(
    array: &mut ArrayWriter<'_>,
    wire: WireApi,
    messages: &'r [Message],
    cache: Option<&mut SerialisedMessages>,
    elements: &mut impl MessageElements<'r>,
) -> Result<(), LlmError> {
    // Where the first message's elements start, once written.
    let start = array.out.len() + usize::from(!array.empty);
    let (from, reused) = match cache.as_deref().and_then(|cache| cache.prefix_of(wire, messages)) {
        Some((count, json)) => {
            // Room for the new messages and the fields after the array too, so the body is not moved as it
            // grows (a move copies the whole conversation again).
            array.out.reserve(json.len() + BODY_TAIL_ROOM);
            array.raw(json);
            (count, json.len())
        }
        None => (0, 0),
    };
    let mut settled = None;
    for (index, message) in messages.iter().enumerate().skip(from) {
        if elements.before(array, message)? {
            settled = Some((index, array.out.len()));
        }
        elements.write(array, message)?;
    }
    if elements.nothing_held() {
        settled = Some((messages.len(), array.out.len()));
    }
    elements.end(array)?;
    if let (Some(cache), Some((count, end))) = (cache, settled)
        && count > from
    {
        if reused > 0 {
            cache.extend(count, &array.out[start + reused..end]);
        } else {
            cache.store(wire, count, &array.out[start..end]);
        }
    }
    Ok(())
}

/// Debug builds (every test) check a body built with a cache against one built without.
#[cfg(debug_assertions)]
pub(crate) fn check_cached_body(
    body: &Bytes,
    request: &crate::ModelRequest,
    build: impl FnOnce(&crate::ModelRequest) -> Result<Bytes, LlmError>,
) -> Result<(), LlmError> {
    if request.body_cache.messages() > 0 {
        let fresh = crate::ModelRequest {
            body_cache: crate::BodyCache::default(),
            ..request.clone()
        };
        debug_assert_eq!(
            *body,
            build(&fresh)?,
            "a body built from cached messages differs from one built afresh"
        );
    }
    Ok(())
}

/// A sampling parameter checked for JSON. JSON has no NaN or infinity, and serde would quietly write
/// `null`, which providers read as "use the default": refuse them instead.
pub(crate) fn finite(name: &str, value: f64) -> Result<f64, LlmError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(LlmError::InvalidRequest(format!(
            "{name} must be a finite number, got {value}"
        )))
    }
}

/// Writes a JSON object field by field and remembers the keys written, so provider extras merged at the
/// end never replace a field the adapter set.
pub(crate) struct ObjectWriter<'k, M> {
    map: M,
    written: Vec<&'k str>,
}

impl<'k, M: SerializeMap> ObjectWriter<'k, M> {
    /// Starts an object on `serializer`.
    pub(crate) fn start<S>(serializer: S) -> Result<Self, S::Error>
    where
        S: Serializer<SerializeMap = M, Error = M::Error>,
    {
        Ok(Self {
            map: serializer.serialize_map(None)?,
            written: Vec::new(),
        })
    }

    pub(crate) fn field<V: Serialize + ?Sized>(&mut self, key: &'k str, value: &V) -> Result<(), M::Error> {
        self.written.push(key);
        self.map.serialize_entry(key, value)
    }

    pub(crate) fn optional<V: Serialize>(&mut self, key: &'k str, value: Option<V>) -> Result<(), M::Error> {
        match value {
            Some(value) => self.field(key, &value),
            None => Ok(()),
        }
    }

    /// The keys written so far, in order.
    pub(crate) fn written(&self) -> &[&'k str] {
        &self.written
    }

    /// Merges provider extras: a key already written is never replaced, and `reserved` keys (what the
    /// adapter owns even when it left them out, such as `messages` or `tools`) are dropped. Extras keep
    /// their own order, after the adapter's fields.
    pub(crate) fn extras(&mut self, extras: &'k Map<String, Value>, reserved: &[&str]) -> Result<(), M::Error> {
        self.extras_where(extras, |key| !reserved.contains(&key))
    }

    /// [`extras`](Self::extras) with the adapter's own test of which keys it owns.
    pub(crate) fn extras_where(
        &mut self,
        extras: &'k Map<String, Value>,
        allowed: impl Fn(&str) -> bool,
    ) -> Result<(), M::Error> {
        for (key, value) in extras {
            if allowed(key) && !self.written.contains(&key.as_str()) {
                self.field(key, value)?;
            }
        }
        Ok(())
    }

    pub(crate) fn end(self) -> Result<M::Ok, M::Error> {
        self.map.end()
    }
}

/// A JSON array written from an iterator made on demand, so a list derived from the request (tools, tool
/// calls, content parts) needs no vector of its own.
pub(crate) struct Seq<F>(pub F);

impl<F, I> Serialize for Seq<F>
where
    F: Fn() -> I,
    I: IntoIterator,
    I::Item: Serialize,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq((self.0)())
    }
}

/// The texts of some items joined by a separator, written as one JSON string without building the joined
/// copy (serde_json escapes what `Display` writes as it goes).
pub(crate) struct Joined<'a, T> {
    items: &'a [T],
    text: fn(&T) -> Option<&str>,
    separator: &'static str,
}

impl<'a, T> Joined<'a, T> {
    /// The texts `text` finds in `items`, in order.
    pub(crate) fn new(items: &'a [T], text: fn(&T) -> Option<&str>, separator: &'static str) -> Self {
        Self { items, text, separator }
    }

    pub(crate) fn is_empty(&self) -> bool {
        !self.items.iter().any(|item| (self.text)(item).is_some())
    }
}

impl<T> fmt::Display for Joined<'_, T> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut separator = "";
        for text in self.items.iter().filter_map(self.text) {
            formatter.write_str(separator)?;
            formatter.write_str(text)?;
            separator = self.separator;
        }
        Ok(())
    }
}

impl<T> Serialize for Joined<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Base64 data as a `data:` URL, written into the JSON string without copying the data first.
pub(crate) struct DataUri<'a> {
    pub media_type: &'a str,
    pub data: &'a str,
}

impl fmt::Display for DataUri<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "data:{};base64,{}", self.media_type, self.data)
    }
}

impl Serialize for DataUri<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A media source as one URL, for the OpenAI wires: its URL, or its data as a `data:` URL.
pub(crate) struct MediaUrl<'a>(pub &'a MediaSource);

impl Serialize for MediaUrl<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            MediaSource::Url { url } => serializer.serialize_str(url),
            MediaSource::Base64 { media_type, data } => DataUri { media_type, data }.serialize(serializer),
        }
    }
}

/// A tool's input schema for the OpenAI wires: as given, and the empty object schema their servers
/// require where none was given.
pub(crate) struct ObjectSchema<'a>(pub &'a Value);

impl Serialize for ObjectSchema<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Null => EmptyObjectSchema.serialize(serializer),
            schema => schema.serialize(serializer),
        }
    }
}

/// `{"type": "object", "properties": {}}`.
pub(crate) struct EmptyObjectSchema;

impl Serialize for EmptyObjectSchema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("type", "object")?;
        map.serialize_entry("properties", &Map::new())?;
        map.end()
    }
}
