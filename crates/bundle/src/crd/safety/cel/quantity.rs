//! Kubernetes resource quantities (`500m`, `1.5Gi`, `2e3`) for the CEL `quantity` library: parsed
//! exactly, as a decimal mantissa and power of ten, so comparisons do not round.

use std::cmp::Ordering;
use std::fmt;

/// A quantity's exact value: `mantissa * 10^exponent`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Quantity {
    mantissa: i128,
    exponent: i32,
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.aligned(other), other.aligned(self)) {
            (Some(a), Some(b)) => a.cmp(&b),
            // Too far apart to align exactly: the magnitudes decide.
            _ => self.approximate().total_cmp(&other.approximate()),
        }
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.exponent >= 0 {
            write!(f, "{}e{}", self.mantissa, self.exponent)
        } else {
            write!(f, "{}e-{}", self.mantissa, -self.exponent)
        }
    }
}

const BINARY: &[(&str, u32)] = &[
    ("Ki", 10),
    ("Mi", 20),
    ("Gi", 30),
    ("Ti", 40),
    ("Pi", 50),
    ("Ei", 60),
];
const DECIMAL: &[(&str, i32)] = &[
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("", 0),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];

impl Quantity {
    /// Parses the Kubernetes quantity syntax: a signed decimal number and one suffix (binary
    /// `Ki`..`Ei`, decimal `n`..`E`, or an exponent `e3`/`E-2`).
    pub(crate) fn parse(text: &str) -> Option<Quantity> {
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || matches!(c, '+' | '-' | '.')))
            .unwrap_or(text.len());
        let (number, suffix) = text.split_at(split);
        let (negative, digits) = match number.as_bytes().first()? {
            b'-' => (true, &number[1..]),
            b'+' => (false, &number[1..]),
            _ => (false, number),
        };
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        if whole.is_empty() && fraction.is_empty()
            || !whole.bytes().all(|b| b.is_ascii_digit())
            || !fraction.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let mut mantissa: i128 = 0;
        for b in whole.bytes().chain(fraction.bytes()) {
            mantissa = mantissa
                .checked_mul(10)?
                .checked_add(i128::from(b - b'0'))?;
        }
        let mut exponent = -i32::try_from(fraction.len()).ok()?;
        if let Some((_, bits)) = BINARY.iter().find(|(s, _)| *s == suffix) {
            mantissa = mantissa.checked_mul(1i128.checked_shl(*bits)?)?;
        } else if let Some((_, e)) = DECIMAL.iter().find(|(s, _)| *s == suffix) {
            exponent = exponent.checked_add(*e)?;
        } else {
            let rest = suffix.strip_prefix(['e', 'E'])?;
            let e: i32 = rest.parse().ok()?;
            exponent = exponent.checked_add(e)?;
        }
        Some(Quantity {
            mantissa: if negative { -mantissa } else { mantissa },
            exponent,
        })
    }

    pub(crate) fn from_int(value: i64) -> Quantity {
        Quantity {
            mantissa: i128::from(value),
            exponent: 0,
        }
    }

    /// The mantissa scaled to the smaller exponent of the two, if that fits.
    fn aligned(&self, other: &Quantity) -> Option<i128> {
        let target = self.exponent.min(other.exponent);
        let shift = u32::try_from(self.exponent - target).ok()?;
        self.mantissa.checked_mul(10i128.checked_pow(shift)?)
    }

    pub(crate) fn approximate(&self) -> f64 {
        self.mantissa as f64 * 10f64.powi(self.exponent)
    }

    pub(crate) fn sign(&self) -> i64 {
        self.mantissa.signum() as i64
    }

    /// The value as an `int`, when it is a whole number that fits.
    pub(crate) fn as_integer(&self) -> Option<i64> {
        if self.exponent >= 0 {
            let shift = u32::try_from(self.exponent).ok()?;
            let value = self.mantissa.checked_mul(10i128.checked_pow(shift)?)?;
            return i64::try_from(value).ok();
        }
        let divisor = 10i128.checked_pow(u32::try_from(-self.exponent).ok()?)?;
        if self.mantissa % divisor != 0 {
            return None;
        }
        i64::try_from(self.mantissa / divisor).ok()
    }

    pub(crate) fn add(&self, other: &Quantity) -> Option<Quantity> {
        let exponent = self.exponent.min(other.exponent);
        Some(Quantity {
            mantissa: self.aligned(other)?.checked_add(other.aligned(self)?)?,
            exponent,
        })
    }

    pub(crate) fn negate(&self) -> Quantity {
        Quantity {
            mantissa: -self.mantissa,
            exponent: self.exponent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Quantity;

    fn q(text: &str) -> Quantity {
        Quantity::parse(text).unwrap_or_else(|| panic!("{text} parses"))
    }

    #[test]
    fn parses_every_suffix_and_compares_exactly() {
        assert_eq!(q("1Ki"), q("1024"));
        assert_eq!(q("1.5Gi"), q("1610612736"));
        assert_eq!(q("500m"), q("0.5"));
        assert_eq!(q("1e3"), q("1k"));
        assert_eq!(q("2E-2"), q("20m"));
        assert_eq!(q("-1"), Quantity::from_int(-1));
        assert!(q("1001m") > q("1"));
        assert!(q("1Ei") > q("1E"));
        assert!(q("1n") < q("1u"));
        assert_eq!(q("1.000"), q("1"));
        assert_eq!(q("+.5"), q("500m"));
    }

    #[test]
    fn refuses_what_kubernetes_refuses() {
        for bad in [
            "", ".", "1.2.3", "1K", "1KiB", "abc", "1e", "1 Gi", "--1", "Gi",
        ] {
            assert!(Quantity::parse(bad).is_none(), "{bad:?} should not parse");
        }
    }

    #[test]
    fn integers_signs_and_sums() {
        assert_eq!(q("2k").as_integer(), Some(2000));
        assert_eq!(q("1500m").as_integer(), None);
        assert_eq!(q("1500m").add(&q("500m")).unwrap().as_integer(), Some(2));
        assert_eq!(q("-3").sign(), -1);
        assert_eq!(q("0").sign(), 0);
        assert_eq!(q("1Ei").as_integer(), Some(1 << 60));
        assert_eq!(q("10E").as_integer(), None, "overflows int64");
        assert!((q("1.5").approximate() - 1.5).abs() < 1e-12);
    }
}
