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
    /// optionally `Z` or an offset `±HH:MM`, `±HHMM` or `±HH` (a space may come before
    /// it). EXIF's `YYYY:MM:DD HH:MM:SS` (photo libraries store it as taken from the
    /// file) is read too.
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
const JULIAN_UNIX_MS: i128 = 210_866_760_000_000;

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
    /// `iso_text` a value that is not text starting `YYYY-MM-DD` (or EXIF's
    /// `YYYY:MM:DD HH:MM`) or a day its month does not have; and NULL for zero and -1 (an
    /// unset time, [`unset`]). What a row view shows beside a time column.
    pub fn sql_utc(self, value: &str) -> String {
        const ISO: &str = "'%Y-%m-%dT%H:%M:%fZ'";
        if self == Epoch::IsoText {
            // The date as ISO writes it (EXIF's colons made dashes); a day the month does
            // not have is none, as in [`Epoch::instant`] (SQLite's functions would roll it
            // over).
            const D: &str = "[0-9][0-9]";
            let date = format!("replace(substr({value}, 1, 10), ':', '-')");
            return format!(
                "CASE WHEN typeof({value}) = 'text' AND ({value} GLOB '{D}{D}-{D}-{D}*' \
                 OR {value} GLOB '{D}{D}:{D}:{D} {D}:{D}*') AND date({date}) = {date} \
                 THEN strftime({ISO}, {date} || substr({value}, 11)) END"
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
                    "CASE WHEN {is_number} AND {number} NOT IN (0, -1) THEN strftime({ISO}, {number}) END"
                )
            }
            Epoch::IsoText => return "NULL".into(),
        };
        format!(
            "CASE WHEN {is_number} AND {number} NOT IN (0, -1) \
             THEN strftime({ISO}, {seconds}, 'unixepoch') END"
        )
    }

    /// The instant a stored value names in this epoch: `None` for NULL, a BLOB, a value of
    /// the wrong kind (text in a numeric epoch that is not a number, a number in
    /// `iso_text`), and a number past the years 0001 to 9999 ([`Reading::Beyond`]).
    /// Text holding a number is read as that number, as SQLite's numeric affinity would.
    pub fn instant(self, value: &Value, text: impl Fn(&[u8]) -> Option<String>) -> Option<Instant> {
        match self.read(value, text) {
            Reading::At(i) => Some(i),
            Reading::Beyond | Reading::NoTime => None,
        }
    }

    /// What a stored value is in this epoch: an instant, a number (or a date) past the
    /// years ISO 8601's four digits write, or no time at all. A real number carries no
    /// finer time than a microsecond at the magnitudes times have, so its instant is
    /// rounded to the microsecond; an integer's is exact.
    pub fn read(self, value: &Value, text: impl Fn(&[u8]) -> Option<String>) -> Reading {
        if self == Epoch::IsoText {
            let Value::Text(bytes) = value else {
                return Reading::NoTime;
            };
            return match text(bytes).as_deref().and_then(parse_iso) {
                Some((nanos, _)) => Reading::of_nanos(nanos),
                None => Reading::NoTime,
            };
        }
        let Some(number) = Number::of(value, &text) else {
            return Reading::NoTime;
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
                return match whole(ms) {
                    Some(ms) => Reading::of_nanos((ms - JULIAN_UNIX_MS) * 1_000_000),
                    None => Reading::Beyond,
                };
            }
            Epoch::IsoText => return Reading::NoTime,
        };
        let offset = i128::from(start) * 1_000_000_000;
        match number {
            Number::Int(i) => Reading::of_nanos(i128::from(i) * unit + offset),
            Number::Real(r) => match whole(r * unit as f64) {
                // To the nearest microsecond (the offset is whole seconds).
                Some(nanos) => Reading::of_nanos((nanos + 500).div_euclid(1_000) * 1_000 + offset),
                None => Reading::Beyond,
            },
        }
    }

    /// Whether `value` is written in this epoch without a zone: ISO text with neither `Z`
    /// nor an offset, which a timeline takes as UTC (SQLite's own date functions write
    /// UTC so) and says so.
    pub fn zone_assumed(self, value: &Value, text: impl Fn(&[u8]) -> Option<String>) -> bool {
        match (self, value) {
            (Epoch::IsoText, Value::Text(bytes)) => text(bytes)
                .as_deref()
                .and_then(parse_iso)
                .is_some_and(|(_, zoned)| !zoned),
            _ => false,
        }
    }
}

/// What a stored value is in an epoch ([`Epoch::read`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// A time within the years 0001 to 9999.
    At(Instant),
    /// A number in the epoch's unit (or a date) outside those years: a time in another
    /// unit, a forged value, a sentinel such as the largest integer. Flagged, never moved.
    Beyond,
    /// No time in this epoch: NULL, a BLOB, text that is no number (or no date), a NaN or
    /// an infinity.
    NoTime,
}

impl Reading {
    fn of_nanos(nanos: i128) -> Reading {
        Instant::from_nanos(nanos).map_or(Reading::Beyond, Reading::At)
    }
}

/// A finite double as a whole number (rounded), within what an `i128` holds with room;
/// `None` past it.
fn whole(x: f64) -> Option<i128> {
    (x.is_finite() && x.abs() < 1e30).then(|| x.round() as i128)
}

/// Whether a stored value is an unset time: zero, or -1 (what applications write for
/// "never": a photo library's unset edit time, a cookie without expiry), as a number or as
/// text that is one. Not an event.
pub fn unset(value: &Value, text: impl Fn(&[u8]) -> Option<String>) -> bool {
    match Number::of(value, &text) {
        Some(Number::Int(i)) => i == 0 || i == -1,
        Some(Number::Real(r)) => r == 0.0 || r == -1.0,
        None => false,
    }
}

/// A number as stored.
#[derive(Clone, Copy)]
enum Number {
    Int(i64),
    Real(f64),
}

impl Number {
    /// A stored value as a number: an integer, a real, or text that is one whole (read as
    /// SQLite's numeric affinity would); not a NaN or an infinity.
    fn of(value: &Value, text: &impl Fn(&[u8]) -> Option<String>) -> Option<Number> {
        let n = match value {
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
        match n {
            Number::Real(r) if !r.is_finite() => None,
            n => Some(n),
        }
    }
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
/// epochs, whose origin is 2001) and 2040, the unset times ([`unset`]) aside: the other
/// half of the evidence for taking a column no catalogue entry describes as a time. `None`
/// when no value is left, when one value fits no epoch, or when several epochs fit them
/// all (seconds since 1970 and since 2001 overlap for a wider window, which is why it is
/// narrow). Text is read as `iso_text` only.
pub fn infer_epoch(
    values: impl IntoIterator<Item = impl std::borrow::Borrow<Value>>,
    text: impl Fn(&[u8]) -> Option<String> + Copy,
) -> Option<Epoch> {
    let mut inference = EpochInference::new();
    for v in values {
        if !inference.add(v.borrow(), text) {
            return None;
        }
    }
    inference.epoch()
}

/// [`infer_epoch`] a value at a time, for a reader whose values come from several places
/// and whose reads can fail.
#[derive(Clone, Debug)]
pub struct EpochInference {
    left: Vec<Epoch>,
    any: bool,
}

impl Default for EpochInference {
    fn default() -> Self {
        EpochInference::new()
    }
}

impl EpochInference {
    /// Every epoch still possible, no value seen.
    pub fn new() -> EpochInference {
        EpochInference {
            left: Epoch::ALL.to_vec(),
            any: false,
        }
    }

    /// Takes one more value; `false` once no epoch fits every value (the rest need not be
    /// read).
    pub fn add(&mut self, v: &Value, text: impl Fn(&[u8]) -> Option<String> + Copy) -> bool {
        const FROM: i128 = 788_918_400 * 1_000_000_000; // 1995-01-01
        const TO: i128 = 2_208_988_800 * 1_000_000_000; // 2040-01-01
        const MAC_FROM: i128 = 1_136_073_600 * 1_000_000_000; // 2006-01-01
        if matches!(v, Value::Null) || unset(v, text) {
            return !self.left.is_empty();
        }
        self.any = true;
        let text_value = matches!(v, Value::Text(_));
        self.left.retain(|e| {
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
        !self.left.is_empty()
    }

    /// The one epoch every value taken is a time in, when there was a value.
    pub fn epoch(&self) -> Option<Epoch> {
        match (self.any, self.left.as_slice()) {
            (true, [one]) => Some(*one),
            _ => None,
        }
    }
}

/// Parses `YYYY-MM-DD[( |T)HH:MM[:SS[.fff…]]][[ ](Z|±HH:MM|±HHMM|±HH)]` (`T` and `Z` in
/// either case), and EXIF's `YYYY:MM:DD HH:MM:SS`: nanoseconds after 1970 (unbounded: the
/// caller bounds them), and whether a zone was written. A date that is not in the
/// calendar (April 31, February 29 of a common year) is none: it is never moved to the
/// next day.
fn parse_iso(text: &str) -> Option<(i128, bool)> {
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
    let exif = t.get(4..5)? == ":" && t.get(7..8)? == ":";
    if !(exif || t.get(4..5)? == "-" && t.get(7..8)? == "-")
        || !(1..=12).contains(&m)
        || !(1..=days_in_month(y, m)).contains(&d)
    {
        return None;
    }
    let mut nanos = i128::from(days_from_civil(y, m, d)?) * DAY_NANOS;
    let mut rest = t.get(10..)?;
    let separators: &[char] = if exif { &[' '] } else { &[' ', 'T', 't'] };
    let time = rest
        .strip_prefix(separators)
        .filter(|time| time.get(2..3) == Some(":"));
    if let Some(time) = time {
        let (h, min) = (digits(time.get(0..2)?)?, digits(time.get(3..5)?)?);
        if h > 23 || min > 59 {
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
    } else if exif {
        // EXIF's date is never written without its time.
        return None;
    }
    // A space may come before the zone (SQLite reads `… 12:00 +02:00`), only after a time.
    let zone = match rest.strip_prefix(' ') {
        Some(z) if time.is_some() && !z.is_empty() => z,
        Some(_) => return None,
        None => rest,
    };
    let zoned = match zone {
        "" => false,
        "Z" | "z" => true,
        offset => {
            let sign = match offset.get(0..1)? {
                "+" => 1,
                "-" => -1,
                _ => return None,
            };
            let body = offset.get(1..)?;
            // `HH:MM`, `HHMM` or `HH`, nothing else.
            let (h, min) = match body.len() {
                5 if body.get(2..3)? == ":" => (body.get(0..2)?, body.get(3..5)?),
                4 => (body.get(0..2)?, body.get(2..4)?),
                2 => (body, "00"),
                _ => return None,
            };
            let (h, min) = (digits(h)?, digits(min)?);
            if h > 23 || min > 59 {
                return None;
            }
            // Local time minus its offset is UTC.
            nanos -= sign * i128::from(h * 3600 + min * 60) * 1_000_000_000;
            true
        }
    };
    Some((nanos, zoned))
}

/// Days in month `m` (1 to 12) of proleptic Gregorian year `y`.
fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
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
        // Milliseconds read as seconds: past the year 9999, a number beyond the years a
        // date is written in (the timeline flags it), as are the sentinels.
        for (epoch, v) in [
            (Epoch::UnixS, Value::Integer(1_700_000_000_123)),
            (Epoch::WebkitUs, Value::Integer(i64::MAX)),
            (Epoch::UnixS, Value::Integer(i64::MIN)),
            (Epoch::UnixS, Value::Real(1e300)),
            (Epoch::JulianDays, Value::Real(-1e300)),
            (Epoch::IsoText, Value::Text("0000-01-01".into())),
        ] {
            assert_eq!(epoch.read(&v, utf8), Reading::Beyond, "{epoch:?} {v:?}");
        }
        for (epoch, v) in [
            (Epoch::UnixS, Value::Real(f64::INFINITY)),
            (Epoch::UnixS, Value::Text("inf".into())),
            (Epoch::UnixS, Value::Text("1e400".into())),
            (Epoch::MacS, Value::Null),
        ] {
            assert_eq!(epoch.read(&v, utf8), Reading::NoTime, "{epoch:?} {v:?}");
        }
        // Seconds read as milliseconds: in 1970, kept there, flagged by the caller.
        let wrong = Epoch::UnixMs.instant(&Value::Integer(1_700_000_000), utf8);
        assert!(wrong.is_some_and(|i| !i.plausible()));
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

    /// A real number is read to the nearest microsecond and a Julian day in SQLite's whole
    /// milliseconds: never a microsecond short of what was written.
    #[test]
    fn reals_and_julian_days_keep_their_last_digit() {
        assert_eq!(
            at(Epoch::UnixS, Value::Real(1_700_000_000.999_999)),
            "2023-11-14T22:13:20.999999Z"
        );
        assert_eq!(
            at(Epoch::MacS, Value::Real(721_000_000.000_001)),
            "2023-11-06T21:46:40.000001Z"
        );
        // Every millisecond of a second, as SQLite's `julianday()` writes it (its day
        // number is the millisecond count over 86,400,000).
        let base_ms: i64 = 1_700_000_000_000;
        for k in 0..1_000 {
            let ms = base_ms + k;
            let days = (ms as f64 + 210_866_760_000_000.0) / 86_400_000.0;
            let want = Epoch::UnixMs.instant(&Value::Integer(ms), utf8).unwrap();
            assert_eq!(
                Epoch::JulianDays.instant(&Value::Real(days), utf8),
                Some(want),
                "{ms}"
            );
        }
        // A nanosecond count is exact, cut to the microsecond when written.
        assert_eq!(
            at(Epoch::UnixNs, Value::Integer(1_700_000_000_123_456_999)),
            "2023-11-14T22:13:20.123456Z"
        );
    }

    #[test]
    fn text_is_a_time_only_in_the_calendar_and_in_the_forms_it_is_written() {
        let iso = |t: &str| at(Epoch::IsoText, Value::Text(t.into()));
        // A day its month does not have is no time (SQLite's functions roll it over).
        for t in [
            "2023-04-31",
            "2023-02-29 12:00",
            "2100-02-29",
            "2023-13-01",
            "2023-00-10",
        ] {
            assert_eq!(iso(t), "", "{t}");
        }
        assert_eq!(iso("2024-02-29"), "2024-02-29T00:00:00.000000Z");
        assert_eq!(iso("2000-02-29"), "2000-02-29T00:00:00.000000Z");
        // The zone: with or without a space before it, in any of its three forms, in either
        // case; a malformed one is no time.
        let want = "2023-11-14T20:13:20.000000Z";
        for t in [
            "2023-11-14 22:13:20 +02:00",
            "2023-11-14t22:13:20+0200",
            "2023-11-14T22:13:20+02",
            "2023-11-14T20:13:20z",
            "2023-11-14 20:13:20 Z",
        ] {
            assert_eq!(iso(t), want, "{t}");
        }
        for t in [
            "2023-11-14T22:13:20+0:530",
            "2023-11-14T22:13:20+05::30",
            "2023-11-14T22:13:20+5",
            "2023-11-14T22:13:20+",
            "2023-11-14T22:13:20  Z",
            "2023-11-14 +02:00",
            "2023-11-14T",
            "2023-11-14 22:13:20 +02:00 x",
        ] {
            assert_eq!(iso(t), "", "{t}");
        }
        // EXIF's form, with its time; never without.
        assert_eq!(iso("2023:11:14 22:13:20"), "2023-11-14T22:13:20.000000Z");
        assert_eq!(iso("2023:11:14"), "");
        assert_eq!(iso("2023:11-14 22:13:20"), "");
        // Whether the zone was taken as UTC.
        let assumed = |t: &str| Epoch::IsoText.zone_assumed(&Value::Text(t.into()), utf8);
        assert!(assumed("2023-11-14 22:13:20") && assumed("2023:11:14 22:13:20"));
        assert!(!assumed("2023-11-14 22:13:20Z") && !assumed("2023-11-14T22:13:20-05:00"));
        assert!(!Epoch::UnixS.zone_assumed(&Value::Integer(1), utf8));
    }

    #[test]
    fn zero_and_minus_one_are_unset_as_numbers_or_text() {
        for v in [
            Value::Integer(0),
            Value::Integer(-1),
            Value::Real(0.0),
            Value::Real(-1.0),
            Value::Text("0".into()),
            Value::Text(" -0 ".into()),
            Value::Text("0.0".into()),
            Value::Text("-1".into()),
        ] {
            assert!(unset(&v, utf8), "{v:?}");
        }
        for v in [
            Value::Integer(1),
            Value::Null,
            Value::Text("".into()),
            Value::Text("never".into()),
            Value::Blob(vec![0]),
        ] {
            assert!(!unset(&v, utf8), "{v:?}");
        }
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
