//! How numbers are written: exact (shortest round-trip) decimal, readable by every Stan CSV
//! reader.

use std::fmt::Write as _;

/// Appends `value` with the fewest digits that parse back to the same `f64`.
///
/// Plain notation for magnitudes in [1e-5, 1e16) (integers without a decimal point, as CmdStan
/// writes them), exponent notation (`1.5e-7`) outside, `nan`/`inf`/`-inf` for non-finite values
/// (CmdStan's spelling, which Python's `float` and numpy accept). The text is exactly what
/// `std`'s `{}` (plain range) and `{:e}` (outside it) write; the digits come from the `zmij`
/// crate's shortest round-trip conversion, laid out here without `fmt` machinery (the row path
/// writes hundreds of numbers per draw). [`write_number_std`] is the reference spelling.
pub fn write_number(out: &mut String, value: f64) {
    if !value.is_finite() {
        out.push_str(if value.is_nan() {
            "nan"
        } else if value > 0.0 {
            "inf"
        } else {
            "-inf"
        });
        return;
    }
    let a = value.abs();
    if value == 0.0 || tie_possible(a) {
        // Zero, and the few values whose shortest digits could be an exact tie (a short
        // binary fraction or integer): the digit-by-digit layout with the tie check.
        let mut buf = [0u8; 40];
        let n = layout(value, &mut buf);
        // `layout` writes only ASCII digits, '-', '.', 'e'.
        out.push_str(std::str::from_utf8(&buf[..n]).unwrap_or("nan"));
        return;
    }
    // zmij writes plain notation exactly on [1e-5, 1e16) too, with `.0` after an integer.
    let mut zb = zmij::Buffer::new();
    let text = zb.format_finite(value);
    if (1e-5..1e16).contains(&a) {
        out.push_str(text.strip_suffix(".0").unwrap_or(text));
        return;
    }
    // Exponent notation: `std` writes the exponent without `+` and without leading zeros.
    match text.split_once('e') {
        Some((mantissa, exp)) => {
            out.push_str(mantissa);
            out.push('e');
            let (negative, digits) = match exp.as_bytes().first() {
                Some(b'-') => (true, &exp[1..]),
                Some(b'+') => (false, &exp[1..]),
                _ => (false, exp),
            };
            if negative {
                out.push('-');
            }
            let digits = digits.trim_start_matches('0');
            out.push_str(if digits.is_empty() { "0" } else { digits });
        }
        None => out.push_str(text),
    }
}

/// Positive finite `a` as `m_odd × 2^twos` with `m_odd` odd: `(m_odd, twos)`; `None` for zero.
fn odd_binary(a: f64) -> Option<(u128, i32)> {
    let bits = a.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if biased == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), biased - 1075)
    };
    if m == 0 {
        return None;
    }
    let tz = m.trailing_zeros() as i32;
    Some((u128::from(m >> tz), e + tz))
}

/// Whether positive finite `a` could be an exact midpoint between two shortest candidates:
/// `a = n × 10^p` with `n` odd and at most 19 digits needs `a`'s odd binary significand times
/// `5^-e` (for `a = m_odd × 2^e`, `e < 0`) below 10^19, or `a` an integer (`e ≥ 0`) within 27
/// binary orders of its odd part. Random doubles fail this at once.
fn tie_possible(a: f64) -> bool {
    let Some((m_odd, twos)) = odd_binary(a) else {
        return false;
    };
    if !(-27..=27).contains(&twos) {
        return false;
    }
    twos >= 0 || m_odd * 5u128.pow(twos.unsigned_abs()) < 10_000_000_000_000_000_000
}

/// The reference spelling of [`write_number`], through `std::fmt` (kept for tests and as the
/// definition of the format).
pub fn write_number_std(out: &mut String, value: f64) {
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

/// Whether positive finite `a` equals `n × 10^p` exactly (`n` odd, at most 18 digits).
fn is_midpoint(a: f64, n: u64, p: i32) -> bool {
    let Some((m_odd, twos)) = odd_binary(a) else {
        return false;
    };
    // n × 10^p = (n × 5^p) × 2^p with n × 5^p odd; 5^28 > 2^64 > n, 5^28 > 2^53 > m_odd.
    if !(-27..=27).contains(&p) {
        return false;
    }
    let five = 5u128.pow(p.unsigned_abs());
    if p >= 0 {
        twos == p && u128::from(n) * five == m_odd
    } else {
        twos == p && u128::from(n) == m_odd * five
    }
}

/// Writes finite `value` into `buf` in [`write_number`]'s spelling; returns the length.
fn layout(value: f64, buf: &mut [u8; 40]) -> usize {
    let mut len = 0;
    if value.is_sign_negative() {
        buf[0] = b'-';
        len = 1;
    }
    if value == 0.0 {
        buf[len] = b'0';
        return len + 1;
    }
    // Shortest round-trip digits and the decimal exponent of the first digit, read back from
    // zmij's text (`1.234e-7`, `0.001234`, `12340000000.0`, `12.34`).
    let mut zb = zmij::Buffer::new();
    let text = zb.format_finite(value.abs()).as_bytes();
    let (mantissa, exp_part) = match text.iter().position(|&c| c == b'e') {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    let mut digits = [0u8; 24];
    let mut nd = 0usize;
    let mut int_digits = 0i32; // digits before the '.' (leading zeros included)
    let mut seen_point = false;
    let mut leading_zeros = 0i32; // zeros after the point before the first nonzero digit
    for &c in mantissa {
        if c == b'.' {
            seen_point = true;
            continue;
        }
        if !seen_point {
            int_digits += 1;
        }
        if nd == 0 && c == b'0' {
            if seen_point {
                leading_zeros += 1;
            } else {
                int_digits -= 1;
            }
            continue;
        }
        if nd < digits.len() {
            digits[nd] = c;
            nd += 1;
        }
    }
    while nd > 1 && digits[nd - 1] == b'0' {
        nd -= 1;
    }
    let mut exp10: i32 = match exp_part {
        Some(e) => {
            let (neg, e) = match e.first() {
                Some(b'-') => (true, &e[1..]),
                Some(b'+') => (false, &e[1..]),
                _ => (false, e),
            };
            let v = e.iter().fold(0i32, |a, &c| a * 10 + i32::from(c - b'0'));
            if neg {
                -v
            } else {
                v
            }
        }
        None => 0,
    };
    // Decimal exponent of the first significant digit: value = 0.d1d2… × 10^(point).
    exp10 += if int_digits > 0 {
        int_digits - 1
    } else {
        -leading_zeros - 1
    };
    let a = value.abs();
    // zmij breaks an exact tie between two shortest candidates to the even digit, `std` to the
    // larger magnitude: when the value is exactly the midpoint above an even last digit, take
    // the digit above (never a carry: the last digit is even).
    if (digits[nd - 1] - b'0').is_multiple_of(2) {
        let d = digits[..nd]
            .iter()
            .fold(0u64, |acc, &c| acc * 10 + u64::from(c - b'0'));
        if is_midpoint(a, d * 10 + 5, exp10 - nd as i32) {
            digits[nd - 1] += 1;
        }
    }
    if (1e-5..1e16).contains(&a) {
        if exp10 >= 0 {
            let int_len = exp10 as usize + 1;
            for k in 0..int_len {
                buf[len] = digits.get(k).filter(|_| k < nd).copied().unwrap_or(b'0');
                len += 1;
            }
            if nd > int_len {
                buf[len] = b'.';
                len += 1;
                for &d in &digits[int_len..nd] {
                    buf[len] = d;
                    len += 1;
                }
            }
        } else {
            buf[len] = b'0';
            buf[len + 1] = b'.';
            len += 2;
            for _ in 0..(-exp10 - 1) {
                buf[len] = b'0';
                len += 1;
            }
            for &d in &digits[..nd] {
                buf[len] = d;
                len += 1;
            }
        }
    } else {
        buf[len] = digits[0];
        len += 1;
        if nd > 1 {
            buf[len] = b'.';
            len += 1;
            for &d in &digits[1..nd] {
                buf[len] = d;
                len += 1;
            }
        }
        buf[len] = b'e';
        len += 1;
        if exp10 < 0 {
            buf[len] = b'-';
            len += 1;
        }
        let mut e = exp10.unsigned_abs();
        let mut tmp = [0u8; 4];
        let mut k = 0;
        loop {
            tmp[k] = b'0' + (e % 10) as u8;
            k += 1;
            e /= 10;
            if e == 0 {
                break;
            }
        }
        while k > 0 {
            k -= 1;
            buf[len] = tmp[k];
            len += 1;
        }
    }
    len
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

    fn std_text(value: f64) -> String {
        let mut out = String::new();
        write_number_std(&mut out, value);
        out
    }

    /// The fast formatter writes exactly the `std::fmt` spelling: random bit patterns (every
    /// exponent), random values in the plain range, the range edges and their neighbours,
    /// integers, subnormals.
    #[test]
    fn fast_formatter_matches_std_spelling() {
        let mut rng = hazel_testdata::Xorshift(0x9E37_79B9_7F4A_7C15);
        let mut next = move || rng.next_u64();
        let check = |v: f64| {
            assert_eq!(text(v), std_text(v), "bits {:#018x}", v.to_bits());
        };
        for _ in 0..400_000 {
            check(f64::from_bits(next()));
        }
        for _ in 0..200_000 {
            let u = (next() >> 11) as f64 / (1u64 << 53) as f64;
            let e = (next() % 30) as i32 - 8;
            check((u - 0.5) * 10f64.powi(e));
            check(((next() % 2_000_001) as f64 - 1e6) / 10f64.powi((next() % 8) as i32));
        }
        for e in -330..=310 {
            let p = 10f64.powi(e);
            for v in [p, -p, p * 1.5, p * 0.999_999_9] {
                for d in [-2i64, -1, 0, 1, 2] {
                    check(f64::from_bits(v.to_bits().wrapping_add_signed(d)));
                }
            }
        }
        for v in [
            0.0,
            -0.0,
            1e-5,
            1e16,
            9.999_999_999_999_998e15,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            f64::EPSILON,
            123456789.125,
            1_658_206_780_088_562.0 + 0.25, // a tie: `std` writes …562.3, zmij …562.2
            1_010_791_494_722.0 + 0.406_25,
        ] {
            check(v);
            check(-v);
        }
        for i in 0..10_000i64 {
            check(i as f64);
            check((i * 1_000_003) as f64);
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
