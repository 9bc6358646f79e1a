//! String `format`s the API server checks on custom resources. Only formats whose rules are
//! clear are checked, and loosely: an unknown format, or one read differently, gives no verdict.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use base64::Engine;

/// `Some(valid)` for a format this module knows, `None` otherwise.
pub(crate) fn check(format: &str, text: &str) -> Option<bool> {
    Some(match format {
        "date-time" | "datetime" => is_date_time(text),
        "date" => is_date(text),
        "byte" => base64::engine::general_purpose::STANDARD
            .decode(text)
            .is_ok(),
        "uuid" | "uuid3" | "uuid4" | "uuid5" => is_uuid(text),
        "ipv4" => text.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => text.parse::<Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(text),
        _ => return None,
    })
}

fn digits(text: &str, n: usize) -> Option<u32> {
    (text.len() == n && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// `YYYY-MM-DD` with a real day of the month.
fn is_date(text: &str) -> bool {
    let mut parts = text.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Some(year), Some(month), Some(day)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// RFC 3339 and the ISO 8601 variants the API server also takes: `T`, `t` or a space between
/// date and time, optional seconds and fraction, optional zone (`Z`, `±hh:mm`, `±hhmm`).
fn is_date_time(text: &str) -> bool {
    let Some((date, rest)) = text
        .split_once(['T', 't', ' '])
        .filter(|(d, _)| d.len() == 10)
    else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let (time, zone) = match rest.find(['Z', 'z', '+', '-']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let zone_ok = match zone {
        "" | "Z" | "z" => true,
        _ => {
            let offset = zone[1..].replace(':', "");
            digits(&offset, 4).is_some_and(|o| o / 100 < 24 && o % 100 < 60)
        }
    };
    let (clock, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let fields: Vec<&str> = clock.split(':').collect();
    let in_range = |i: usize, limit: u32| {
        fields
            .get(i)
            .and_then(|f| digits(f, 2))
            .is_some_and(|v| v < limit)
    };
    let clock_ok = matches!(fields.len(), 2 | 3)
        && in_range(0, 24)
        && in_range(1, 60)
        && (fields.len() == 2 || in_range(2, 61));
    zone_ok && clock_ok && !fraction.is_empty() && fraction.bytes().all(|b| b.is_ascii_digit())
}

/// 32 hex digits, hyphens optional between the usual groups.
fn is_uuid(text: &str) -> bool {
    let groups = [8, 4, 4, 4, 12];
    let mut rest = text;
    for (i, len) in groups.into_iter().enumerate() {
        if i > 0 {
            rest = rest.strip_prefix('-').unwrap_or(rest);
        }
        let Some(head) = rest.get(..len) else {
            return false;
        };
        if !head.bytes().all(|b| b.is_ascii_hexdigit()) {
            return false;
        }
        rest = &rest[len..];
    }
    rest.is_empty()
}

fn is_cidr(text: &str) -> bool {
    let Some((addr, prefix)) = text.split_once('/') else {
        return false;
    };
    let Ok(prefix) = prefix.parse::<u8>() else {
        return false;
    };
    match addr.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => prefix <= 32,
        Ok(IpAddr::V6(_)) => prefix <= 128,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn formats() {
        let cases = [
            ("date-time", "2024-05-01T10:20:30Z", Some(true)),
            ("date-time", "2024-05-01T10:20:30.123456+02:00", Some(true)),
            ("date-time", "2024-05-01t10:20:30-0500", Some(true)),
            ("date-time", "2024-05-01T10:20", Some(true)),
            ("date-time", "2024-02-30T10:20:30Z", Some(false)),
            ("date-time", "yesterday", Some(false)),
            ("date-time", "2024-05-01T25:00:00Z", Some(false)),
            ("date", "2024-02-29", Some(true)),
            ("date", "2023-02-29", Some(false)),
            ("date", "2024-13-01", Some(false)),
            ("byte", "aGVsbG8=", Some(true)),
            ("byte", "not base64!", Some(false)),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", Some(true)),
            ("uuid", "123E4567E89B12D3A456426614174000", Some(true)),
            ("uuid", "123e4567-e89b-12d3-a456", Some(false)),
            ("ipv4", "10.0.0.1", Some(true)),
            ("ipv4", "10.0.0.256", Some(false)),
            ("ipv6", "fd00::1", Some(true)),
            ("ipv6", "10.0.0.1", Some(false)),
            ("cidr", "10.0.0.0/8", Some(true)),
            ("cidr", "fd00::/129", Some(false)),
            ("cidr", "10.0.0.0", Some(false)),
            ("int32", "anything", None),
            ("hostname", "anything at all", None),
        ];
        for (format, text, expected) in cases {
            assert_eq!(check(format, text), expected, "{format} {text:?}");
        }
    }
}
