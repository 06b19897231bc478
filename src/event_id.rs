//! Where a message's event id comes from. `compare --scan` and `replay` share this one
//! extraction, so both agree on what "the same event" means.

use std::borrow::Cow;
use std::fmt;

use crate::kafka::Fetched;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventIdSource {
    /// A message header, e.g. `header:event_id`.
    Header(String),
    /// A JSON pointer into the payload, e.g. `json:/meta/id`.
    Json(String),
    /// The message key.
    Key,
    /// `topic:partition:offset`, for consumers that dedupe by position.
    Coordinates,
    /// Header `event_id`, then JSON field `/event_id`.
    Default,
}

impl EventIdSource {
    pub fn parse(text: &str) -> Result<EventIdSource, String> {
        let expected = "expected header:NAME, json:/pointer, key or coordinates";
        match text.split_once(':') {
            Some(("header", name)) if !name.is_empty() => {
                Ok(EventIdSource::Header(name.to_string()))
            }
            // RFC 6901 escapes only `~0` (`~`) and `~1` (`/`).
            Some(("json", pointer))
                if pointer.starts_with('/')
                    && pointer
                        .split('~')
                        .skip(1)
                        .any(|after| !after.starts_with(['0', '1'])) =>
            {
                Err(format!(
                    "'{pointer}' is not a JSON pointer: a '~' is written ~0, a '/' in a name ~1"
                ))
            }
            Some(("json", pointer)) if pointer.starts_with('/') => {
                Ok(EventIdSource::Json(pointer.to_string()))
            }
            Some(("json", pointer)) => Err(format!(
                "'{pointer}' is not a JSON pointer; it starts with '/', e.g. json:/event_id"
            )),
            None if text == "key" => Ok(EventIdSource::Key),
            None if text == "coordinates" => Ok(EventIdSource::Coordinates),
            _ => Err(format!("'{text}' is not an event id source; {expected}")),
        }
    }

    /// The event id of a message, or `None` when it has none where this source looks.
    /// Borrowed from the message where it is its bytes as they are (a header, the key).
    pub fn extract<'m>(&self, topic: &str, message: &Fetched<'m>) -> Option<Cow<'m, str>> {
        self.extract_parts(
            topic,
            message.partition(),
            message.offset(),
            message.key(),
            |name| message.header(name),
            message.payload(),
        )
    }

    /// The extraction on plain parts, so it can be tested without a broker.
    pub fn extract_parts<'m>(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        key: Option<&'m [u8]>,
        header: impl Fn(&str) -> Option<&'m [u8]>,
        payload: Option<&'m [u8]>,
    ) -> Option<Cow<'m, str>> {
        let text = |bytes: &'m [u8]| {
            std::str::from_utf8(bytes)
                .ok()
                .filter(|s| !s.is_empty())
                .map(Cow::Borrowed)
        };
        let json = |payload: &[u8], pointer: &str| json_field(payload, pointer).map(Cow::Owned);
        match self {
            EventIdSource::Header(name) => header(name).and_then(text),
            EventIdSource::Json(pointer) => json(payload?, pointer),
            EventIdSource::Key => key.and_then(text),
            EventIdSource::Coordinates => Some(Cow::Owned(format!("{topic}:{partition}:{offset}"))),
            EventIdSource::Default => header("event_id")
                .and_then(text)
                .or_else(|| payload.and_then(|p| json(p, "/event_id"))),
        }
    }
}

impl EventIdSource {
    /// Why a message has no event id where this source looks: what is there instead (a
    /// header that is not UTF-8, a JSON value that is no string), for the message saying so.
    pub fn why_missing<'m>(
        &self,
        key: Option<&'m [u8]>,
        header: impl Fn(&str) -> Option<&'m [u8]>,
        payload: Option<&'m [u8]>,
    ) -> String {
        let bytes = |what: &str, bytes: Option<&[u8]>| match bytes {
            None => format!("no {what}"),
            Some([]) => format!("the {what} is empty"),
            Some(bytes) if std::str::from_utf8(bytes).is_err() => {
                format!("the {what} is not UTF-8 text")
            }
            Some(_) => format!("the {what} holds no id"),
        };
        let json = |pointer: &str| {
            let Some(payload) = payload else {
                return "no payload".to_string();
            };
            let Ok(value) = serde_json::from_slice::<serde_json::Value>(payload) else {
                return "the payload is not JSON".to_string();
            };
            let kind = match value.pointer(pointer) {
                None => return format!("the payload has no {pointer}"),
                Some(serde_json::Value::String(_)) => return format!("{pointer} is empty"),
                Some(serde_json::Value::Null) => "null",
                Some(serde_json::Value::Bool(_)) => "a boolean",
                Some(serde_json::Value::Array(_)) => "an array",
                Some(serde_json::Value::Object(_)) => "an object",
                Some(serde_json::Value::Number(_)) => "a number",
            };
            format!("{pointer} is {kind}, not a string or a number")
        };
        match self {
            EventIdSource::Header(name) => bytes(&format!("header {name}"), header(name)),
            EventIdSource::Json(pointer) => json(pointer),
            EventIdSource::Key => bytes("key", key),
            EventIdSource::Coordinates => "every message has coordinates".to_string(),
            EventIdSource::Default => format!(
                "{}, and {}",
                bytes("header event_id", header("event_id")),
                json("/event_id")
            ),
        }
    }
}

/// The id at `pointer`: a string's text, or a number as written, digit for digit and
/// exponent as it stands (`1E3`, `1e3` and `1e+3` are three ids, which the parsed number
/// would all write `1e+3`).
fn json_field(payload: &[u8], pointer: &str) -> Option<String> {
    let text = raw_json_at(payload, pointer)?.get();
    match text.as_bytes().first()? {
        b'"' => serde_json::from_str::<String>(text)
            .ok()
            .filter(|id| !id.is_empty()),
        b'-' | b'0'..=b'9' => Some(text.to_string()),
        _ => None,
    }
}

/// The JSON text of the value at `pointer` (RFC 6901) in `payload`, as written; `None`
/// where the payload is not JSON or has nothing there. A name given twice in an object has
/// its last value, as a parsed object keeps.
fn raw_json_at<'p>(payload: &'p [u8], pointer: &str) -> Option<&'p serde_json::value::RawValue> {
    use serde_json::value::RawValue;
    let mut value: &RawValue = serde_json::from_slice(payload).ok()?;
    if pointer.is_empty() {
        return Some(value);
    }
    for token in pointer.strip_prefix('/')?.split('/') {
        let name = token.replace("~1", "/").replace("~0", "~");
        value = match value.get().as_bytes().first()? {
            b'{' => {
                let object: std::collections::HashMap<String, &RawValue> =
                    serde_json::from_str(value.get()).ok()?;
                *object.get(&name)?
            }
            b'[' => {
                // An index is digits without a leading zero or sign, as in RFC 6901.
                if name.starts_with('+') || (name.starts_with('0') && name.len() > 1) {
                    return None;
                }
                let array: Vec<&RawValue> = serde_json::from_str(value.get()).ok()?;
                *array.get(name.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(value)
}

impl fmt::Display for EventIdSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventIdSource::Header(name) => write!(f, "header:{name}"),
            EventIdSource::Json(pointer) => write!(f, "json:{pointer}"),
            EventIdSource::Key => f.write_str("key"),
            EventIdSource::Coordinates => f.write_str("coordinates"),
            EventIdSource::Default => f.write_str("header:event_id, then json:/event_id"),
        }
    }
}

/// A 128-bit hash of an event id (XXH3): sets of a topic's worth of ids stay small, and two
/// ids colliding is as likely as a UUID collision. Only ever kept in memory.
pub fn id_hash(text: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extract(
        source: &str,
        header_value: Option<&'static [u8]>,
        payload: &[u8],
    ) -> Option<String> {
        let source = if source == "default" {
            EventIdSource::Default
        } else {
            EventIdSource::parse(source).unwrap()
        };
        source
            .extract_parts(
                "orders",
                2,
                41,
                Some(b"key-7"),
                |name| {
                    if name == "event_id" || name == "id" {
                        header_value
                    } else {
                        None
                    }
                },
                Some(payload),
            )
            .map(Cow::into_owned)
    }

    #[test]
    fn each_source_reads_its_place() {
        let body = br#"{"event_id":"from-body","meta":{"id":42}}"#;
        assert_eq!(
            extract("header:id", Some(b"h-1"), body).as_deref(),
            Some("h-1")
        );
        assert_eq!(extract("json:/meta/id", None, body).as_deref(), Some("42"));
        assert_eq!(extract("key", None, body).as_deref(), Some("key-7"));
        assert_eq!(
            extract("coordinates", None, body).as_deref(),
            Some("orders:2:41")
        );
    }

    /// A number is taken as written: ids beyond 64 bits must not meet in a float, where
    /// 12345678901234567890123 and …124 are one value.
    #[test]
    fn a_number_is_the_id_as_written() {
        let id = |body: &[u8]| extract("json:/id", None, body);
        assert_eq!(
            id(br#"{"id":12345678901234567890123}"#).as_deref(),
            Some("12345678901234567890123")
        );
        assert_eq!(
            id(br#"{"id":12345678901234567890124}"#).as_deref(),
            Some("12345678901234567890124")
        );
        assert_eq!(id(br#"{"id":42.0}"#).as_deref(), Some("42.0"));
        assert_eq!(id(br#"{"id":-7}"#).as_deref(), Some("-7"));
        // Exponents as written: three ids, where the parsed number writes each `1e+3`.
        for written in ["1e3", "1E3", "1e+3", "10e2", "-0", "1.50"] {
            let body = format!(r#"{{ "id" : {written} , "other": 1}}"#);
            assert_eq!(id(body.as_bytes()).as_deref(), Some(written));
        }
    }

    /// A pointer reaches into objects and arrays as RFC 6901 says, and a name given twice
    /// has its last value.
    #[test]
    fn a_pointer_finds_the_value_as_a_parsed_document_would() {
        let body = br#"{"a/b": {"m~n": [{"id": "x"}, {"id": 7}]}, "dup": "first", "dup": "last",
            "list": ["zero", "one"], "": "empty name", "s": "esc\"aped\u00e9"}"#;
        let id = |pointer: &str| extract(&format!("json:{pointer}"), None, body);
        assert_eq!(id("/a~1b/m~0n/0/id").as_deref(), Some("x"));
        assert_eq!(id("/a~1b/m~0n/1/id").as_deref(), Some("7"));
        assert_eq!(id("/dup").as_deref(), Some("last"));
        assert_eq!(id("/list/1").as_deref(), Some("one"));
        assert_eq!(id("/").as_deref(), Some("empty name"));
        assert_eq!(id("/s").as_deref(), Some("esc\"aped\u{e9}"));
        for nothing in [
            "/list/01",
            "/list/+1",
            "/list/2",
            "/list/x",
            "/a~1b/m~0n",
            "/missing",
            "/s/0",
        ] {
            assert_eq!(id(nothing), None, "{nothing}");
        }
        let serde = |pointer: &str| {
            serde_json::from_slice::<serde_json::Value>(body)
                .unwrap()
                .pointer(pointer)
                .is_some()
        };
        for pointer in ["/list/01", "/list/+1", "/list/2"] {
            assert!(!serde(pointer), "{pointer}");
        }
    }

    #[test]
    fn default_prefers_the_header_then_the_body() {
        let body = br#"{"event_id":"from-body"}"#;
        assert_eq!(
            extract("default", Some(b"from-header"), body).as_deref(),
            Some("from-header")
        );
        assert_eq!(extract("default", None, body).as_deref(), Some("from-body"));
        assert_eq!(extract("default", None, b"not json"), None);
        assert_eq!(extract("default", Some(b""), b"{}"), None);
    }

    #[test]
    fn a_message_without_an_id_says_what_is_there_instead() {
        let why = |source: &str,
                   key: Option<&'static [u8]>,
                   header: Option<&'static [u8]>,
                   payload: Option<&'static [u8]>| {
            let source = match source {
                "default" => EventIdSource::Default,
                other => EventIdSource::parse(other).unwrap(),
            };
            source.why_missing(key, |_| header, payload)
        };
        assert_eq!(
            why("default", None, Some(b"\xff\xfe"), Some(br#"{"event_id":null}"#)),
            "the header event_id is not UTF-8 text, and /event_id is null, not a string or a number"
        );
        assert_eq!(
            why("default", None, Some(b""), Some(br#"{"event_id":""}"#)),
            "the header event_id is empty, and /event_id is empty"
        );
        assert_eq!(
            why("default", None, None, Some(b"not json")),
            "no header event_id, and the payload is not JSON"
        );
        assert_eq!(
            why(
                "json:/meta/id",
                None,
                None,
                Some(br#"{"meta":{"id":{"a":1}}}"#)
            ),
            "/meta/id is an object, not a string or a number"
        );
        assert_eq!(
            why("json:/id", None, None, Some(br#"{"other":1}"#)),
            "the payload has no /id"
        );
        assert_eq!(why("json:/id", None, None, None), "no payload");
        assert_eq!(why("key", Some(b""), None, None), "the key is empty");
        assert_eq!(why("key", None, None, None), "no key");
        assert_eq!(
            why("header:id", None, Some(b"\x80"), None),
            "the header id is not UTF-8 text"
        );
    }

    #[test]
    fn bad_specs_say_what_is_expected() {
        for bad in ["json:/a/~2", "json:/a~", "json:/~x/b"] {
            assert!(
                EventIdSource::parse(bad)
                    .unwrap_err()
                    .contains("a '~' is written ~0"),
                "{bad}"
            );
        }
        assert_eq!(
            EventIdSource::parse("json:/a~1b/~0c"),
            Ok(EventIdSource::Json("/a~1b/~0c".into()))
        );
        assert!(EventIdSource::parse("headers:x")
            .unwrap_err()
            .contains("expected header:NAME"));
        assert!(EventIdSource::parse("json:event_id")
            .unwrap_err()
            .contains("starts with '/'"));
        assert!(EventIdSource::parse("header:").is_err());
    }
}
