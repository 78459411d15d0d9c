//! Human-readable sizes ("256 MiB") and durations ("30s").

use std::time::Duration;

/// Parses a size such as `4096`, `64KiB`, `256 MiB`, `1GiB`, `10MB`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| {
        format!("`{text}` is not a size: expected a number and a unit like \"64MiB\"")
    })?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        other => {
            return Err(format!(
                "unknown size unit `{other}` in `{text}`: use B, KiB, MiB or GiB"
            ));
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size `{text}` is too large"))
}

/// Parses a duration such as `500ms`, `30s`, `2m`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| {
        format!("`{text}` is not a duration: expected a number and a unit like \"30s\"")
    })?;
    match unit.trim() {
        "ms" => Ok(Duration::from_millis(n)),
        "s" | "" => Ok(Duration::from_secs(n)),
        "m" | "min" => Ok(Duration::from_secs(n * 60)),
        other => Err(format!(
            "unknown duration unit `{other}` in `{text}`: use ms, s or m"
        )),
    }
}

/// Formats a duration the way the policy file writes it: `30s`, `500ms`.
pub(crate) fn format_duration(d: Duration) -> String {
    if d.subsec_millis() != 0 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}s", d.as_secs())
    }
}

/// Formats a byte count the way the policy file writes it.
pub fn format_size(n: u64) -> String {
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{}{unit}", n >> shift);
        }
    }
    format!("{n}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("256 MiB"), Ok(256 << 20));
        assert_eq!(parse_size("1gib"), Ok(1 << 30));
        assert_eq!(parse_size("10MB"), Ok(10_000_000));
        assert!(parse_size("lots").unwrap_err().contains("not a size"));
        assert!(
            parse_size("5 parsecs")
                .unwrap_err()
                .contains("unknown size unit")
        );
        assert!(
            parse_size("99999999999999 GiB")
                .unwrap_err()
                .contains("too large")
        );
        assert_eq!(format_size(256 << 20), "256MiB");
        assert_eq!(format_size(1000), "1000B");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(
            parse_duration("soon")
                .unwrap_err()
                .contains("not a duration")
        );
        assert!(
            parse_duration("3h")
                .unwrap_err()
                .contains("unknown duration unit")
        );
    }
}
