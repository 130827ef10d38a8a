//! How numbers are written: exact (shortest round-trip) decimal, readable by every Stan CSV
//! reader.

use std::fmt::Write as _;

/// Appends `value` with the fewest digits that parse back to the same `f64`.
///
/// Plain notation for magnitudes in [1e-5, 1e16) (integers without a decimal point, as CmdStan
/// writes them), exponent notation (`1.5e-7`) outside, `nan`/`inf`/`-inf` for non-finite values
/// (CmdStan's spelling, which Python's `float` and numpy accept).
pub fn write_number(out: &mut String, value: f64) {
    if value.is_nan() {
        out.push_str("nan");
    } else if value.is_infinite() {
        out.push_str(if value > 0.0 { "inf" } else { "-inf" });
    } else if value == 0.0 || (1e-5..1e16).contains(&value.abs()) {
        let _ = write!(out, "{value}");
    } else {
        let _ = write!(out, "{value:e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(value: f64) -> String {
        let mut out = String::new();
        write_number(&mut out, value);
        out
    }

    #[test]
    fn numbers_round_trip_exactly() {
        for &v in &[
            0.1,
            -2.5,
            1.0 / 3.0,
            1e-7,
            6.02e23,
            f64::MIN_POSITIVE,
            f64::MAX,
            -1e-300,
            123456789.125,
        ] {
            let written = text(v);
            assert_eq!(
                written.parse::<f64>().unwrap().to_bits(),
                v.to_bits(),
                "{v} written as {written}"
            );
        }
    }

    #[test]
    fn spelling_matches_cmdstan() {
        assert_eq!(text(10.0), "10");
        assert_eq!(text(0.0), "0");
        assert_eq!(text(1e-7), "1e-7");
        assert_eq!(text(f64::NAN), "nan");
        assert_eq!(text(f64::NEG_INFINITY), "-inf");
    }
}
