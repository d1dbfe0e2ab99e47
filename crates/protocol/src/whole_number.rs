//! Integers as JSON Schema counts them: `integer` is any number without a fractional part, so `10.0`
//! is the integer 10. A client (or a JavaScript runtime, or a fuzzer) that writes a whole number as a
//! float is therefore sending a valid integer, and serde's own integer types would refuse it. Every
//! integer the API reads, in a body or in a query string, goes through the one visitor here; a
//! fraction, a number out of the target's range or anything that is not a number is still an error.
//!
//! Bodies use [`deserialize`] and [`option`] (JSON numbers only: `"10"` stays a type error, as the
//! schema says); query strings use [`query`], whose values arrive as text and are read the same way
//! ([`parse`]).

use std::fmt;
use std::marker::PhantomData;

use serde::Deserializer;
use serde::de::{self, Visitor};

/// The integer types the API reads. Conversions go through `u64`/`i64`, so the range check is the
/// target's own; the bounds are for messages.
pub trait Integer: Sized + TryFrom<u64> + TryFrom<i64> {
    const MIN: i128;
    const MAX: i128;
}

macro_rules! integer {
    ($($type:ty),*) => {
        $(impl Integer for $type {
            const MIN: i128 = <$type>::MIN as i128;
            const MAX: i128 = <$type>::MAX as i128;
        })*
    };
}

integer!(u32, u64);

/// For a required integer field: `#[serde(deserialize_with = "whole_number::deserialize")]`.
pub fn deserialize<'de, D: Deserializer<'de>, T: Integer>(deserializer: D) -> Result<T, D::Error> {
    deserializer.deserialize_any(WholeNumber::<T, false>(PhantomData))
}

/// For an optional integer field, with `#[serde(default)]`: `null` reads as absent, as a bare
/// `Option` does.
pub fn option<'de, D: Deserializer<'de>, T: Integer>(deserializer: D) -> Result<Option<T>, D::Error> {
    deserializer.deserialize_option(Optional::<T, false>(PhantomData))
}

/// An optional integer of a query string (`?limit=10.0`), with `#[serde(default)]`.
pub fn query<'de, D: Deserializer<'de>, T: Integer>(deserializer: D) -> Result<Option<T>, D::Error> {
    deserializer.deserialize_option(Optional::<T, true>(PhantomData))
}

/// Reads an integer written as text (a query value, a header): `10`, `10.0` and `1e1` are all 10;
/// surrounding whitespace is ignored. `None` for anything else, a fraction or a value out of range.
pub fn parse<T: Integer>(text: &str) -> Option<T> {
    let text = text.trim();
    if let Ok(value) = text.parse::<u64>() {
        return T::try_from(value).ok();
    }
    if let Ok(value) = text.parse::<i64>() {
        return T::try_from(value).ok();
    }
    // `f64::from_str` also reads "inf" and "NaN"; `from_float` refuses them.
    text.parse::<f64>().ok().and_then(from_float)
}

/// A float that is a whole number within `T`'s range, as that integer.
fn from_float<T: Integer>(value: f64) -> Option<T> {
    if !value.is_finite() || value.fract() != 0.0 {
        return None;
    }
    // 2^64 and -2^63 are exact as floats; a whole float inside those bounds converts without loss.
    const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;
    const MINUS_TWO_POW_63: f64 = -9_223_372_036_854_775_808.0;
    if (0.0..TWO_POW_64).contains(&value) {
        // Whole, non-negative and below 2^64: the cast is exact.
        T::try_from(value as u64).ok()
    } else if (MINUS_TWO_POW_63..0.0).contains(&value) {
        // Whole and within i64: the cast is exact.
        T::try_from(value as i64).ok()
    } else {
        None
    }
}

/// `TEXT`: whether a string holding a number is read as that number (query strings only).
struct WholeNumber<T, const TEXT: bool>(PhantomData<T>);

impl<T: Integer, const TEXT: bool> WholeNumber<T, TEXT> {
    fn out_of_range<E: de::Error>(unexpected: de::Unexpected<'_>) -> E {
        E::invalid_value(unexpected, &Self(PhantomData))
    }
}

impl<T: Integer, const TEXT: bool> Visitor<'_> for WholeNumber<T, TEXT> {
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "a whole number between {} and {}", T::MIN, T::MAX)
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<T, E> {
        T::try_from(value).map_err(|_| Self::out_of_range(de::Unexpected::Unsigned(value)))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<T, E> {
        T::try_from(value).map_err(|_| Self::out_of_range(de::Unexpected::Signed(value)))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<T, E> {
        // A fraction is not an integer at all (a type error, as serde's own integers report it); a whole
        // number may still be out of range.
        if !value.is_finite() || value.fract() != 0.0 {
            return Err(E::invalid_type(de::Unexpected::Float(value), &self));
        }
        from_float(value).ok_or_else(|| Self::out_of_range(de::Unexpected::Float(value)))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<T, E> {
        if !TEXT {
            return Err(E::invalid_type(de::Unexpected::Str(value), &self));
        }
        parse(value).ok_or_else(|| E::invalid_value(de::Unexpected::Str(value), &self))
    }
}

struct Optional<T, const TEXT: bool>(PhantomData<T>);

impl<'de, T: Integer, const TEXT: bool> Visitor<'de> for Optional<T, TEXT> {
    type Value = Option<T>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        WholeNumber::<T, TEXT>(PhantomData).expecting(formatter)
    }

    fn visit_none<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<T>, D::Error> {
        deserializer
            .deserialize_any(WholeNumber::<T, TEXT>(PhantomData))
            .map(Some)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    struct Body {
        #[serde(deserialize_with = "deserialize")]
        count: u32,
        #[serde(default, deserialize_with = "option")]
        limit: Option<u64>,
    }

    fn body(value: serde_json::Value) -> Result<Body, String> {
        serde_json::from_value(value).map_err(|error| error.to_string())
    }

    #[test]
    fn whole_floats_are_integers_and_fractions_are_not() {
        let read = body(json!({"count": 10.0, "limit": 1e3})).unwrap();
        assert_eq!((read.count, read.limit), (10, Some(1000)));
        let read = body(json!({"count": 7, "limit": null})).unwrap();
        assert_eq!((read.count, read.limit), (7, None));
        assert_eq!(body(json!({"count": 7})).unwrap().limit, None);

        let error = body(json!({"count": 10.5})).unwrap_err();
        assert!(error.contains("invalid type: floating point `10.5`"), "{error}");
        assert!(error.contains("a whole number between 0 and 4294967295"), "{error}");
        assert!(body(json!({"count": -1})).is_err());
        assert!(body(json!({"count": 4_294_967_296_u64})).is_err());
        assert!(body(json!({"count": 4_294_967_296.0})).is_err());
        assert!(body(json!({"count": 1, "limit": 1.0e20})).is_err());
        // In a body a string is not a number, whatever it holds.
        let error = body(json!({"count": "10"})).unwrap_err();
        assert!(error.contains("invalid type: string"), "{error}");
    }

    #[test]
    fn query_strings_are_read_as_numbers() {
        #[derive(Debug, Deserialize)]
        struct Query {
            #[serde(default, deserialize_with = "query")]
            limit: Option<u32>,
        }
        // The query extractor hands each value over as a string; a JSON string takes the same path.
        let read = |text: &str| {
            serde_json::from_value::<Query>(json!({"limit": text}))
                .map(|query| query.limit)
                .map_err(|error| error.to_string())
        };
        assert_eq!(read("10"), Ok(Some(10)));
        assert_eq!(read("10.0"), Ok(Some(10)));
        assert_eq!(read(" 25 "), Ok(Some(25)));
        assert!(read("10.5").is_err());
        assert!(read("-3").is_err());
        assert!(read("NaN").is_err());
        assert!(read("ten").is_err());
    }

    #[test]
    fn parse_reads_text_in_every_integer_type() {
        assert_eq!(parse::<u64>("18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse::<u64>("-12"), None);
        assert_eq!(parse::<u32>("1e1"), Some(10));
        assert_eq!(parse::<u32>("inf"), None);
        assert_eq!(parse::<u32>(""), None);
    }
}
