//! Points in time as applications store them: the epoch and unit of a timestamp column
//! ([`Epoch`]), a stored value turned into a UTC instant, and that instant written as ISO
//! 8601. A value is converted exactly as its epoch says, never shifted to look right;
//! one outside the years an application can have written ([`Instant::plausible`]) is
//! flagged by the caller.

use pager::Value;
use serde::{Deserialize, Serialize};

/// The epoch and unit of a stored time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Epoch {
    /// Seconds since 1970-01-01 UTC (integer or real).
    UnixS,
    /// Milliseconds since 1970 (Android, Java, JavaScript).
    UnixMs,
    /// Microseconds since 1970 (Firefox's PRTime).
    UnixUs,
    /// Nanoseconds since 1970.
    UnixNs,
    /// Microseconds since 1601-01-01 UTC (Chromium, WebKit).
    WebkitUs,
    /// Units of 100 ns since 1601-01-01 UTC (Windows FILETIME).
    Filetime,
    /// Seconds since 2001-01-01 UTC (Apple's Cocoa and Core Data, integer or real).
    MacS,
    /// Nanoseconds since 2001-01-01 UTC (Apple's newer stores).
    MacNs,
    /// Days since noon UTC of 4714-11-24 BC (proleptic Gregorian), SQLite's `julianday()`.
    JulianDays,
    /// Text: `YYYY-MM-DD`, then optionally `HH:MM[:SS[.fff]]` after a space or `T`, then
    /// optionally `Z` or an offset `±HH:MM`.
    IsoText,
}

/// Seconds from 1601-01-01 to 1970-01-01.
const FROM_1601: i64 = 11_644_473_600;
/// Seconds from 1970-01-01 to 2001-01-01.
const TO_2001: i64 = 978_307_200;
/// The Julian day of 1970-01-01 00:00 UTC.
#[cfg(test)]
const JULIAN_UNIX: f64 = 2_440_587.5;
/// The same in milliseconds.
const JULIAN_UNIX_MS: f64 = 210_866_760_000_000.0;

impl Epoch {
    /// Every epoch, in declaration order.
    pub const ALL: [Epoch; 10] = [
        Epoch::UnixS,
        Epoch::UnixMs,
        Epoch::UnixUs,
        Epoch::UnixNs,
        Epoch::WebkitUs,
        Epoch::Filetime,
        Epoch::MacS,
        Epoch::MacNs,
        Epoch::JulianDays,
        Epoch::IsoText,
    ];

    /// The epoch's name as profiles write it (`unix_ms`, `webkit_us`, …).
    pub fn name(self) -> &'static str {
        match self {
            Epoch::UnixS => "unix_s",
            Epoch::UnixMs => "unix_ms",
            Epoch::UnixUs => "unix_us",
            Epoch::UnixNs => "unix_ns",
            Epoch::WebkitUs => "webkit_us",
            Epoch::Filetime => "filetime",
            Epoch::MacS => "mac_s",
            Epoch::MacNs => "mac_ns",
            Epoch::JulianDays => "julian_days",
            Epoch::IsoText => "iso_text",
        }
    }

    /// The epoch a name gives ([`Epoch::name`]).
    pub fn parse(name: &str) -> Option<Epoch> {
        Epoch::ALL.into_iter().find(|e| e.name() == name)
    }

    /// An SQL expression (SQLite's own date functions, so that any reader of the output
    /// gets it) giving the time the SQL value `value` is in this epoch as UTC ISO 8601 text,
    /// to the millisecond (`YYYY-MM-DDTHH:MM:SS.SSSZ`); NULL where [`Epoch::instant`] gives
    /// none: NULL, a BLOB, in a numeric epoch text that is not a number whole, in
    /// `iso_text` a value that is not text starting `YYYY-MM-DD`; and NULL for zero (an
    /// unset time). What a row view shows beside a time column.
    pub fn sql_utc(self, value: &str) -> String {
        const ISO: &str = "'%Y-%m-%dT%H:%M:%fZ'";
        if self == Epoch::IsoText {
            return format!(
                "CASE WHEN typeof({value}) = 'text' AND {value} GLOB \
                 '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' THEN strftime({ISO}, {value}) END"
            );
        }
        // A number, stored as one or as text that is one whole (as Rust parses it, roughly:
        // digits, a sign, a point, an exponent, and at least one digit).
        let is_number = format!(
            "(typeof({value}) IN ('integer', 'real') OR (typeof({value}) = 'text' \
             AND trim({value}) NOT GLOB '*[^0-9.eE+-]*' AND trim({value}) GLOB '*[0-9]*'))"
        );
        let number = format!("CAST(trim({value}) AS REAL)");
        // Seconds since 1970 the number gives.
        let seconds = match self {
            Epoch::UnixS => number.clone(),
            Epoch::UnixMs => format!("{number} / 1e3"),
            Epoch::UnixUs => format!("{number} / 1e6"),
            Epoch::UnixNs => format!("{number} / 1e9"),
            Epoch::WebkitUs => format!("{number} / 1e6 - {FROM_1601}"),
            Epoch::Filetime => format!("{number} / 1e7 - {FROM_1601}"),
            Epoch::MacS => format!("{number} + {TO_2001}"),
            Epoch::MacNs => format!("{number} / 1e9 + {TO_2001}"),
            // A number is a Julian day to SQLite's date functions.
            Epoch::JulianDays => {
                return format!(
                    "CASE WHEN {is_number} AND {number} <> 0 THEN strftime({ISO}, {number}) END"
                )
            }
            Epoch::IsoText => return "NULL".into(),
        };
        format!(
            "CASE WHEN {is_number} AND {number} <> 0 \
             THEN strftime({ISO}, {seconds}, 'unixepoch') END"
        )
    }

    /// The instant a stored value names in this epoch: `None` for NULL, a BLOB, a value of
    /// the wrong kind (text in a numeric epoch that is not a number, a number in
    /// `iso_text`), or one past the range of a 64-bit count of nanoseconds around 1970.
    /// Text holding a number is read as that number, as SQLite's numeric affinity would.
    pub fn instant(self, value: &Value, text: impl Fn(&[u8]) -> Option<String>) -> Option<Instant> {
        if self == Epoch::IsoText {
            let Value::Text(bytes) = value else {
                return None;
            };
            return parse_iso(&text(bytes)?);
        }
        let number = match value {
            Value::Integer(i) => Number::Int(*i),
            Value::Real(r) => Number::Real(*r),
            Value::Text(bytes) => {
                let s = text(bytes)?;
                let s = s.trim();
                match s.parse::<i64>() {
                    Ok(i) => Number::Int(i),
                    Err(_) => Number::Real(s.parse::<f64>().ok()?),
                }
            }
            Value::Null | Value::Blob(_) => return None,
        };
        // (nanoseconds per unit, seconds from 1970 to the epoch's start)
        let (unit, start): (i128, i64) = match self {
            Epoch::UnixS => (1_000_000_000, 0),
            Epoch::UnixMs => (1_000_000, 0),
            Epoch::UnixUs => (1_000, 0),
            Epoch::UnixNs => (1, 0),
            Epoch::WebkitUs => (1_000, -FROM_1601),
            Epoch::Filetime => (100, -FROM_1601),
            Epoch::MacS => (1_000_000_000, TO_2001),
            Epoch::MacNs => (1, TO_2001),
            Epoch::JulianDays => {
                let days = match number {
                    Number::Int(i) => i as f64,
                    Number::Real(r) => r,
                };
                // In whole milliseconds, as SQLite computes a Julian day (`iJD`): a
                // day number near 2.46 million carries no finer time in a double.
                let ms = (days * 86_400_000.0 + 0.5).floor();
                return Instant::from_f64_nanos((ms - JULIAN_UNIX_MS) * 1e6);
            }
            Epoch::IsoText => return None,
        };
        let offset = i128::from(start) * 1_000_000_000;
        match number {
            Number::Int(i) => Instant::from_nanos(i128::from(i) * unit + offset),
            Number::Real(r) => Instant::from_f64_nanos(r * unit as f64)
                .and_then(|i| Instant::from_nanos(i.0 + offset)),
        }
    }
}

/// A number as stored.
#[derive(Clone, Copy)]
enum Number {
    Int(i64),
    Real(f64),
}

/// A point in time: nanoseconds since 1970-01-01 00:00 UTC (negative before).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(pub i128);

/// Nanoseconds in a day.
const DAY_NANOS: i128 = 86_400 * 1_000_000_000;

impl Instant {
    /// The instant `nanos` after 1970, within the years 0001 to 9999 (what ISO 8601's four
    /// digits write).
    pub fn from_nanos(nanos: i128) -> Option<Instant> {
        const FROM: i128 = -62_135_596_800 * 1_000_000_000; // 0001-01-01
        const TO: i128 = 253_402_300_800 * 1_000_000_000; // 10000-01-01
        (FROM..TO).contains(&nanos).then_some(Instant(nanos))
    }

    fn from_f64_nanos(nanos: f64) -> Option<Instant> {
        if !nanos.is_finite() || nanos.abs() > 1e30 {
            return None;
        }
        Instant::from_nanos(nanos.round() as i128)
    }

    /// Whether an application can have written this time: from 1980 up to, not
    /// including, 2100. Anything else (a zero, a time in another unit, a forged value) is
    /// flagged by the caller, never moved.
    pub fn plausible(self) -> bool {
        const FROM: i128 = 315_532_800 * 1_000_000_000; // 1980-01-01
        const TO: i128 = 4_102_444_800 * 1_000_000_000; // 2100-01-01
        (FROM..TO).contains(&self.0)
    }

    /// The instant as UTC ISO 8601: `YYYY-MM-DDTHH:MM:SS.ffffffZ` (microseconds; a
    /// nanosecond remainder is cut, as Timesketch reads microseconds).
    pub fn iso8601(self) -> String {
        let days = self.0.div_euclid(DAY_NANOS);
        let within = self.0.rem_euclid(DAY_NANOS);
        let (y, m, d) = civil_from_days(i64::try_from(days).unwrap_or(0));
        let micros = within / 1_000;
        let secs = micros / 1_000_000;
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
            secs / 3600,
            secs % 3600 / 60,
            secs % 60,
            micros % 1_000_000
        )
    }
}

/// Whether a column's name says it may hold a time (`created_at`, `last_visit_time`,
/// `expiry`, `dateAdded`, …): half of the evidence for taking a column no catalogue entry
/// describes as a time; the other half is every value ([`infer_epoch`]).
pub fn time_like_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    const WORDS: [&str; 20] = [
        "time", "date", "stamp", "created", "modified", "updated", "expir", "visited", "accessed",
        "deleted", "_at", "when", "seen", "sent", "saved", "added", "received", "opened",
        "started", "ended",
    ];
    WORDS.iter().any(|w| n.contains(w)) || n.ends_with("_ts") || n == "ts"
}

/// The one epoch in which every value of a column is a time between 1995 (2006 for Apple's
/// epochs, whose origin is 2001) and 2040, the zeros (an unset time) aside: the other half of the evidence for taking a column no
/// catalogue entry describes as a time. `None` when no value is left, when one value fits
/// no epoch, or when several epochs fit them all (seconds since 1970 and since 2001 overlap
/// for a wider window, which is why it is narrow). Text is read as `iso_text` only.
pub fn infer_epoch(
    values: impl IntoIterator<Item = impl std::borrow::Borrow<Value>>,
    text: impl Fn(&[u8]) -> Option<String> + Copy,
) -> Option<Epoch> {
    const FROM: i128 = 788_918_400 * 1_000_000_000; // 1995-01-01
    const TO: i128 = 2_208_988_800 * 1_000_000_000; // 2040-01-01
    const MAC_FROM: i128 = 1_136_073_600 * 1_000_000_000; // 2006-01-01
    let mut left: Vec<Epoch> = Epoch::ALL.to_vec();
    let mut any = false;
    for v in values {
        let v = v.borrow();
        let zero = matches!(v, Value::Integer(0)) || matches!(v, Value::Real(r) if *r == 0.0);
        if matches!(v, Value::Null) || zero {
            continue;
        }
        any = true;
        left.retain(|e| {
            let text_value = matches!(v, Value::Text(_));
            // A small count is a time just after its epoch's origin: an Apple time is
            // taken from 2006 on, five years after 2001 (a Unix one, with 1970 its origin,
            // from 1995 on).
            let from = match e {
                Epoch::MacS | Epoch::MacNs => MAC_FROM,
                _ => FROM,
            };
            // Text is a time only as text; a number never is `iso_text`.
            (text_value == (*e == Epoch::IsoText))
                && e.instant(v, text)
                    .is_some_and(|i| (from..TO).contains(&i.0))
        });
        if left.is_empty() {
            return None;
        }
    }
    match (any, left.as_slice()) {
        (true, [one]) => Some(*one),
        _ => None,
    }
}

/// Parses `YYYY-MM-DD[( |T)HH:MM[:SS[.fff…]]][Z|±HH:MM]`.
fn parse_iso(text: &str) -> Option<Instant> {
    let t = text.trim();
    let digits = |s: &str| -> Option<i64> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let (y, m, d) = (
        digits(t.get(0..4)?)?,
        digits(t.get(5..7)?)?,
        digits(t.get(8..10)?)?,
    );
    if t.get(4..5)? != "-"
        || t.get(7..8)? != "-"
        || !(1..=12).contains(&m)
        || !(1..=31).contains(&d)
    {
        return None;
    }
    let mut nanos = i128::from(days_from_civil(y, m, d)?) * DAY_NANOS;
    let mut rest = t.get(10..)?;
    if let Some(time) = rest.strip_prefix([' ', 'T']) {
        let (h, min) = (digits(time.get(0..2)?)?, digits(time.get(3..5)?)?);
        if time.get(2..3)? != ":" || h > 23 || min > 59 {
            return None;
        }
        nanos += i128::from(h * 3600 + min * 60) * 1_000_000_000;
        rest = time.get(5..)?;
        if let Some(s) = rest.strip_prefix(':') {
            let sec = digits(s.get(0..2)?)?;
            if sec > 60 {
                return None;
            }
            nanos += i128::from(sec) * 1_000_000_000;
            rest = s.get(2..)?;
            if let Some(frac) = rest.strip_prefix('.') {
                let len = frac.bytes().take_while(u8::is_ascii_digit).count();
                let f = frac.get(..len)?;
                let scaled: String = f.chars().chain(std::iter::repeat('0')).take(9).collect();
                nanos += i128::from(digits(&scaled)?);
                rest = frac.get(len..)?;
            }
        }
    }
    match rest {
        "" | "Z" => {}
        offset => {
            let sign = match offset.get(0..1)? {
                "+" => 1,
                "-" => -1,
                _ => return None,
            };
            let body = offset.get(1..)?.replace(':', "");
            let (h, min) = (digits(body.get(0..2)?)?, digits(body.get(2..4)?)?);
            if body.len() != 4 || h > 23 || min > 59 {
                return None;
            }
            // Local time minus its offset is UTC.
            nanos -= sign * i128::from(h * 3600 + min * 60) * 1_000_000_000;
        }
    }
    Instant::from_nanos(nanos)
}

/// The proleptic Gregorian date of day `z` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z.saturating_add(719_468);
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era.saturating_mul(400) + i64::from(m <= 2), m, d)
}

/// The day after 1970-01-01 of a proleptic Gregorian date (`days_from_civil`).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> Option<i64> {
    let y = y.checked_sub(i64::from(m <= 2))?;
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era.checked_mul(146_097)?.checked_add(doe - 719_468)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf8(b: &[u8]) -> Option<String> {
        String::from_utf8(b.to_vec()).ok()
    }

    fn at(epoch: Epoch, v: Value) -> String {
        epoch
            .instant(&v, utf8)
            .map(Instant::iso8601)
            .unwrap_or_default()
    }

    /// One instant, 2023-11-14T22:13:20.123456Z (Unix 1700000000.123456), as each
    /// epoch's rule writes it.
    #[test]
    fn every_epoch_names_the_same_instant() {
        let want = "2023-11-14T22:13:20.123456Z";
        assert_eq!(at(Epoch::UnixS, Value::Real(1_700_000_000.123456)), want);
        assert_eq!(
            at(Epoch::UnixMs, Value::Integer(1_700_000_000_123)),
            "2023-11-14T22:13:20.123000Z"
        );
        assert_eq!(
            at(Epoch::UnixUs, Value::Integer(1_700_000_000_123_456)),
            want
        );
        assert_eq!(
            at(Epoch::UnixNs, Value::Integer(1_700_000_000_123_456_789)),
            want
        );
        assert_eq!(
            at(
                Epoch::WebkitUs,
                Value::Integer((1_700_000_000 + FROM_1601) * 1_000_000 + 123_456)
            ),
            want
        );
        assert_eq!(
            at(
                Epoch::Filetime,
                Value::Integer((1_700_000_000 + FROM_1601) * 10_000_000 + 1_234_560)
            ),
            want
        );
        assert_eq!(
            at(Epoch::MacS, Value::Integer(1_700_000_000 - TO_2001)),
            "2023-11-14T22:13:20.000000Z"
        );
        assert_eq!(
            at(
                Epoch::MacNs,
                Value::Integer((1_700_000_000 - TO_2001) * 1_000_000_000 + 123_456_000)
            ),
            want
        );
        assert_eq!(
            at(
                Epoch::JulianDays,
                Value::Real(JULIAN_UNIX + 1_700_000_000.0 / 86_400.0)
            ),
            "2023-11-14T22:13:20.000000Z"
        );
        for text in [
            "2023-11-14 22:13:20.123456",
            "2023-11-14T22:13:20.123456Z",
            "2023-11-15T00:13:20.123456+02:00",
            "2023-11-14T20:13:20.123456-0200",
        ] {
            assert_eq!(at(Epoch::IsoText, Value::Text(text.into())), want, "{text}");
        }
        assert_eq!(
            at(Epoch::IsoText, Value::Text("2023-11-14".into())),
            "2023-11-14T00:00:00.000000Z"
        );
        assert_eq!(
            at(Epoch::UnixMs, Value::Text("1700000000123".into())),
            "2023-11-14T22:13:20.123000Z"
        );
    }

    #[test]
    fn what_is_no_time_is_none_and_the_implausible_is_kept_as_it_is() {
        assert_eq!(Epoch::UnixS.instant(&Value::Null, utf8), None);
        assert_eq!(Epoch::UnixS.instant(&Value::Blob(vec![1]), utf8), None);
        assert_eq!(Epoch::IsoText.instant(&Value::Integer(5), utf8), None);
        assert_eq!(
            Epoch::IsoText.instant(&Value::Text("yesterday".into()), utf8),
            None
        );
        assert_eq!(Epoch::UnixNs.instant(&Value::Real(f64::NAN), utf8), None);
        // Past any four-digit year.
        assert_eq!(
            Epoch::WebkitUs.instant(&Value::Integer(i64::MAX), utf8),
            None
        );
        assert_eq!(
            Epoch::UnixMs.instant(&Value::Integer(300_000_000_000_000), utf8),
            None
        );
        assert_eq!(
            Epoch::UnixS.instant(&Value::Integer(-62_135_596_801), utf8),
            None
        );
        // Milliseconds read as seconds: far in the future, kept there and flagged.
        let wrong = Epoch::UnixS.instant(&Value::Integer(1_700_000_000_123), utf8);
        assert!(wrong.is_none_or(|i| !i.plausible()));
        let zero = Epoch::WebkitUs
            .instant(&Value::Integer(0), utf8)
            .map(Instant::iso8601);
        assert_eq!(zero.as_deref(), Some("1601-01-01T00:00:00.000000Z"));
        assert!(Epoch::UnixS
            .instant(&Value::Integer(1_700_000_000), utf8)
            .is_some_and(Instant::plausible));
        for e in Epoch::ALL {
            assert_eq!(Epoch::parse(e.name()), Some(e));
        }
    }

    #[test]
    fn a_column_is_a_time_only_where_its_name_and_every_value_say_so() {
        let infer = |v: &[Value]| infer_epoch(v, utf8);
        assert!(time_like_name("last_visit_time") && time_like_name("created_at"));
        assert!(time_like_name("dateAdded") && !time_like_name("title"));
        assert_eq!(
            infer(&[Value::Integer(1_700_000_000), Value::Integer(0)]),
            Some(Epoch::UnixS)
        );
        assert_eq!(
            infer(&[Value::Integer(1_700_000_000_123)]),
            Some(Epoch::UnixMs)
        );
        assert_eq!(
            infer(&[Value::Integer(13_345_000_000_000_000)]),
            Some(Epoch::WebkitUs)
        );
        assert_eq!(infer(&[Value::Real(721_000_000.5)]), Some(Epoch::MacS));
        assert_eq!(
            infer(&[Value::Text("2024-05-01 12:00:00".into())]),
            Some(Epoch::IsoText)
        );
        // A count, a mix of units, nothing but zeros: no time.
        assert_eq!(infer(&[Value::Integer(42)]), None);
        // 1.6 s after 2001 in nanoseconds is no Apple time: seconds since 1970.
        assert_eq!(infer(&[Value::Integer(1_600_000_000)]), Some(Epoch::UnixS));
        assert_eq!(
            infer(&[
                Value::Integer(1_700_000_000),
                Value::Integer(1_700_000_000_123)
            ]),
            None
        );
        assert_eq!(infer(&[Value::Integer(0), Value::Null]), None);
    }

    #[test]
    fn days_and_dates_round_trip() {
        for day in [-719_468i64, -1, 0, 1, 10_957, 19_675, 2_932_896] {
            let (y, m, d) = civil_from_days(day);
            assert_eq!(days_from_civil(y, m, d), Some(day));
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
