//! Times, durations and sizes written for people, in one place: every front end and every
//! sentence of the checks formats them through here.

/// A duration for people: `45 s`, `15 min`, `2 h 5 min`, `3 days`.
pub fn human_duration(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 86_400 => {
            let minutes = (s % 3600) / 60;
            if minutes == 0 {
                format!("{} h", s / 3600)
            } else {
                format!("{} h {minutes} min", s / 3600)
            }
        }
        s => {
            let days = s / 86_400;
            if days == 1 {
                "1 day".to_string()
            } else {
                format!("{days} days")
            }
        }
    }
}

/// A size limit as configured, exactly: `10 MiB`, `64 KiB`, `1000 bytes`.
pub fn exact_size(bytes: usize) -> String {
    if bytes >= 1024 * 1024 && bytes.is_multiple_of(1024 * 1024) {
        format!("{} MiB", bytes / (1024 * 1024))
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// A byte count for people: `512 B`, `1.5 KiB`, `10.0 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if b < KIB {
        format!("{bytes} B")
    } else if b < KIB * KIB {
        format!("{:.1} KiB", b / KIB)
    } else {
        format!("{:.1} MiB", b / (KIB * KIB))
    }
}

/// `1st`, `2nd`, `3rd`, `11th`…
pub fn ordinal(n: usize) -> String {
    format!("{n}{}", ordinal_suffix(n))
}

pub fn ordinal_suffix(n: usize) -> &'static str {
    match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

/// Formats milliseconds since the epoch as RFC 3339 in UTC, with milliseconds.
pub fn rfc3339_ms(ms: i64) -> String {
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| ms.to_string())
}

/// The time zone times are shown in to people: local by default (`TZ` honoured; the clock
/// module's `local_zone` reads it), or UTC when asked (`--utc`, the window's UTC switch).
/// JSON, NDJSON, HAR and fixtures are always RFC 3339 in UTC ([`rfc3339_ms`]).
#[derive(Debug, Clone)]
pub struct Zone(jiff::tz::TimeZone);

impl Zone {
    /// UTC.
    pub fn utc() -> Zone {
        Zone(jiff::tz::TimeZone::UTC)
    }

    /// A zone from jiff's time zone.
    pub fn new(tz: jiff::tz::TimeZone) -> Zone {
        Zone(tz)
    }

    /// A zone from a POSIX `TZ` string such as `JST-9` or `CET-1CEST,M3.5.0,M10.5.0/3`; `None`
    /// when it does not parse.
    pub fn posix(text: &str) -> Option<Zone> {
        jiff::tz::TimeZone::posix(text).ok().map(Zone)
    }

    /// The jiff time zone.
    pub fn tz(&self) -> &jiff::tz::TimeZone {
        &self.0
    }

    /// Whether this is UTC (or a zone always at offset zero).
    pub fn is_utc(&self) -> bool {
        self.0.to_fixed_offset().is_ok_and(|o| o.seconds() == 0)
    }

    /// The zone's name at a moment: its abbreviation (`CET`, `JST`, `UTC`) or, when it has
    /// none, its offset (`+09`).
    pub fn name_at(&self, ms: i64) -> String {
        let Ok(ts) = jiff::Timestamp::from_millisecond(ms) else {
            return "UTC".into();
        };
        let info = self.0.to_offset_info(ts);
        let abbreviation = info.abbreviation();
        if abbreviation.is_empty() || abbreviation.starts_with(['+', '-']) {
            format!("UTC{}", info.offset())
        } else {
            abbreviation.to_string()
        }
    }

    fn at(&self, ms: i64) -> Option<jiff::ZonedDateTime> {
        jiff::Timestamp::from_millisecond(ms)
            .ok()
            .map(|ts| ts.to_zoned_datetime(self.0.clone()))
    }
}

fn month_name(month: i8) -> &'static str {
    const NAMES: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    NAMES
        .get(usize::try_from(month - 1).unwrap_or(0))
        .copied()
        .unwrap_or("?")
}

/// The time of day in the zone: `14:35:02.123`.
pub fn time_of_day(ms: i64, zone: &Zone) -> String {
    match zone.at(ms) {
        Some(t) => format!(
            "{:02}:{:02}:{:02}.{:03}",
            t.hour(),
            t.minute(),
            t.second(),
            t.millisecond()
        ),
        None => rfc3339_ms(ms),
    }
}

/// A time for a list: the time of day when it is on the same day as `now_ms` in the zone, else
/// the date too (`Nov 29 14:35:02`, or `2025-11-29 14:35` in another year).
pub fn short_time(ms: i64, now_ms: i64, zone: &Zone) -> String {
    let (Some(t), Some(now)) = (zone.at(ms), zone.at(now_ms)) else {
        return rfc3339_ms(ms);
    };
    if t.date() == now.date() {
        time_of_day(ms, zone)
    } else if t.year() == now.year() {
        format!(
            "{} {:02} {:02}:{:02}:{:02}",
            month_name(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        )
    } else {
        format!(
            "{:04}-{:02}-{:02} {:02}:{:02}",
            t.year(),
            t.month(),
            t.day(),
            t.hour(),
            t.minute()
        )
    }
}

/// A whole time with its zone, for a detail pane: `2026-11-30 15:35:02.123 CET (UTC+01)`, or
/// `2026-11-30 14:35:02.123 UTC`.
pub fn full_time(ms: i64, zone: &Zone) -> String {
    let Some(t) = zone.at(ms) else {
        return rfc3339_ms(ms);
    };
    let name = zone.name_at(ms);
    let offset = if zone.is_utc() || name.starts_with("UTC") {
        String::new()
    } else {
        format!(" (UTC{})", t.offset())
    };
    format!(
        "{:04}-{:02}-{:02} {} {name}{offset}",
        t.year(),
        t.month(),
        t.day(),
        time_of_day(ms, zone)
    )
}

/// RFC 3339 in the zone, one token: `2026-11-30T15:35:02.123+01:00` (`…Z` in UTC).
pub fn zoned_rfc3339(ms: i64, zone: &Zone) -> String {
    let Some(t) = zone.at(ms) else {
        return rfc3339_ms(ms);
    };
    if zone.is_utc() {
        return rfc3339_ms(ms);
    }
    let seconds = t.offset().seconds();
    let sign = if seconds < 0 { '-' } else { '+' };
    let minutes = seconds.unsigned_abs() / 60;
    format!(
        "{:04}-{:02}-{:02}T{}{sign}{:02}:{:02}",
        t.year(),
        t.month(),
        t.day(),
        time_of_day(ms, zone),
        minutes / 60,
        minutes % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_keeps_milliseconds_in_utc() {
        assert_eq!(rfc3339_ms(1_614_265_330_123), "2021-02-25T15:02:10.123Z");
    }

    #[test]
    fn times_are_shown_in_the_zone_with_the_date_when_not_today() {
        // 2021-02-25T15:02:10.123Z
        let ms = 1_614_265_330_123;
        let tokyo = Zone::posix("JST-9").expect("posix TZ");
        let utc = Zone::utc();
        assert_eq!(time_of_day(ms, &tokyo), "00:02:10.123");
        assert_eq!(time_of_day(ms, &utc), "15:02:10.123");
        // Same day in Tokyo (the 26th), a day later in UTC terms.
        assert_eq!(short_time(ms, ms + 3_600_000, &tokyo), "00:02:10.123");
        assert_eq!(short_time(ms, ms + 86_400_000, &utc), "Feb 25 15:02:10");
        assert_eq!(
            short_time(ms, ms + 400 * 86_400_000, &utc),
            "2021-02-25 15:02"
        );
        assert_eq!(
            full_time(ms, &tokyo),
            "2021-02-26 00:02:10.123 JST (UTC+09)"
        );
        assert_eq!(full_time(ms, &utc), "2021-02-25 15:02:10.123 UTC");
        assert_eq!(zoned_rfc3339(ms, &tokyo), "2021-02-26T00:02:10.123+09:00");
        assert_eq!(zoned_rfc3339(ms, &utc), "2021-02-25T15:02:10.123Z");
        let india = Zone::posix("IST-5:30").expect("posix TZ");
        assert_eq!(zoned_rfc3339(ms, &india), "2021-02-25T20:32:10.123+05:30");
        assert!(utc.is_utc() && !tokyo.is_utc());
    }

    #[test]
    fn sizes_and_ordinals_read_as_people_write_them() {
        assert_eq!(exact_size(10 * 1024 * 1024), "10 MiB");
        assert_eq!(exact_size(1000), "1000 bytes");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(ordinal(11), "11th");
        assert_eq!(ordinal(22), "22nd");
        assert_eq!(human_duration(7500), "2 h 5 min");
    }
}
