//! Serde adapters that store an `f64` as its IEEE bit pattern, so that values round-trip
//! exactly (NaN and infinities included) whatever the serialisation format.

/// An `f64` as its bit pattern: `#[serde(with = "hazel_draws::bits::f64")]`.
pub mod f64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(value.to_bits())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        u64::deserialize(d).map(f64::from_bits)
    }
}

/// A `Vec<f64>` as the bit patterns of its elements: `#[serde(with = "hazel_draws::bits::vec_f64")]`.
pub mod vec_f64 {
    use serde::ser::SerializeSeq;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(values: &[f64], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(values.len()))?;
        for v in values {
            seq.serialize_element(&v.to_bits())?;
        }
        seq.end()
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        Vec::<u64>::deserialize(d).map(|bits| bits.into_iter().map(f64::from_bits).collect())
    }
}
