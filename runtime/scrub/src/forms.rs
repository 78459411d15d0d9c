//! The forms a secret's value is scrubbed in: as it is, and as common
//! encoders and escapers write it (percent-encoders from a table, JSON,
//! HTML, Markdown, base64). Each table row names who writes it so; a test
//! per row holds it to that encoder's real output.

use base64::Engine as _;

/// A percent-encoder: who writes so, what it keeps besides ASCII letters
/// and digits, and whether it writes a space as `+`.
type Percent = (&'static str, &'static [u8], bool);

/// Percent-encoders in common use. Each form is scrubbed with upper- and
/// lower-case hex digits, and encoded twice (a URL carried in another's
/// query).
const PERCENT: &[Percent] = &[
    (
        "RFC 3986: Python quote(safe=''), PHP rawurlencode, .NET EscapeDataString",
        b"-._~",
        false,
    ),
    ("Python quote() (safe='/')", b"-._~/", false),
    (
        "Python quote_plus, urlencode; Go url.QueryEscape; Ruby CGI.escape",
        b"-._~",
        true,
    ),
    ("Go url.PathEscape", b"-._~$&+:=@", false),
    ("JavaScript encodeURIComponent", b"-._~!'()*", false),
    ("JavaScript encodeURI", b"-._~!'()*;,/?:@&=+$#", false),
    (
        "Java URLEncoder, URLSearchParams, HTML forms",
        b"*-._",
        true,
    ),
    ("PHP urlencode", b"-._", true),
    (".NET WebUtility.UrlEncode", b"-_.!*()", true),
    ("every byte but letters and digits", b"", false),
];

/// `value` as the encoder `(_, keep, plus)` writes it.
fn percent(value: &str, (_, keep, plus): &Percent) -> String {
    let mut out = String::with_capacity(value.len() * 3);
    for &b in value.as_bytes() {
        if b.is_ascii_alphanumeric() || keep.contains(&b) {
            out.push(b as char);
        } else if b == b' ' && *plus {
            out.push('+');
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// How Markdown writers escape text: which ASCII signs get a backslash.
const MARKDOWN: &[(&str, &str)] = &[
    // htmd (what `fetch` writes), turndown.
    ("htmd, turndown", "\\*_`[]"),
    // CommonMark allows a backslash before any ASCII punctuation, and
    // careful writers put one before each.
    (
        "every ASCII punctuation sign",
        "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
    ),
];

/// Every form of `value` to scrub, without duplicates, longest-lived
/// first: a whole form is replaced before a part of it could be.
pub fn forms(value: &str) -> Vec<Vec<u8>> {
    let json = value.replace('\\', "\\\\").replace('"', "\\\"");
    let mut all = vec![
        value.to_string(),
        // JSON must escape `"` and `\`, and may escape `/` (PHP does).
        json.replace('/', "\\/"),
        json,
        // JSON that escapes what HTML holds special as `\u00XX`: .NET
        // (`+` and `'` too, upper case), Go (`<>&`, lower case).
        json_u(value, "\"&'+<>`", |n| format!("\\u{n:04X}")),
        json_u(value, "<>&", |n| format!("\\u{n:04x}")),
    ];
    for p in PERCENT {
        let once = percent(value, p);
        all.push(percent(&once, p));
        all.push(lower_hex(&once));
        all.push(once);
    }
    // As an HTML page writes it (a page that shows the request back).
    for (quot, apos, more) in HTML_STYLES {
        all.push(escaped(value, |c| match c {
            '&' => Some("&amp;".into()),
            '<' => Some("&lt;".into()),
            '>' => Some("&gt;".into()),
            '"' => Some(quot.into()),
            '\'' => Some(apos.into()),
            c => more
                .iter()
                .find(|(k, _)| *k == c)
                .map(|(_, e)| e.to_string()),
        }));
    }
    // Every sign as a numeric reference, as encoders that escape all do.
    let numeric: [fn(u32) -> String; 3] = [
        |n| format!("&#{n};"),
        |n| format!("&#x{n:x};"),
        |n| format!("&#x{n:X};"),
    ];
    for reference in numeric {
        all.push(escaped(value, |c| {
            (!c.is_ascii_alphanumeric()).then(|| reference(c as u32))
        }));
    }
    for (_, signs) in MARKDOWN {
        all.push(escaped(value, |c| {
            signs.contains(c).then(|| format!("\\{c}"))
        }));
    }
    for engine in [
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ] {
        // Whole first, so that a whole one is replaced whole.
        all.push(engine.encode(value));
        all.extend(base64_cores(engine, value.as_bytes()));
    }
    let mut forms: Vec<Vec<u8>> = Vec::new();
    for f in all {
        if !f.is_empty() && !forms.iter().any(|g| g == f.as_bytes()) {
            forms.push(f.into_bytes());
        }
    }
    forms
}

/// `value` as a JSON string body in which `special` characters are written
/// as `u` makes them of their number (`\u002B`); `"` and `\` otherwise as
/// `\"` and `\\`.
fn json_u(value: &str, special: &str, u: fn(u32) -> String) -> String {
    escaped(value, |c| match c {
        c if special.contains(c) => Some(u(c as u32)),
        '"' => Some("\\\"".into()),
        '\\' => Some("\\\\".into()),
        _ => None,
    })
}

/// `value` with each character `escape` has a form for written so.
fn escaped(value: &str, escape: impl Fn(char) -> Option<String>) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match escape(c) {
            Some(e) => out.push_str(&e),
            None => out.push(c),
        }
    }
    out
}

/// How an HTML escaper writes `"` and `'` (all write `&amp;`, `&lt;` and
/// `&gt;`), and what else it escapes; any other character stays as it is.
type HtmlStyle = (&'static str, &'static str, &'static [(char, &'static str)]);

const HTML_STYLES: [HtmlStyle; 7] = [
    // Python's `html.escape`.
    ("&quot;", "&#x27;", &[]),
    // Go's `html.EscapeString`, Jinja (MarkupSafe).
    ("&#34;", "&#39;", &[]),
    // lodash's `escape`, Rails.
    ("&quot;", "&#39;", &[]),
    // Go's `html/template`, in text and attribute values.
    (
        "&#34;",
        "&#39;",
        &[('+', "&#43;"), ('=', "&#61;"), ('`', "&#96;")],
    ),
    // PHP's `htmlspecialchars` with `ENT_QUOTES`.
    ("&quot;", "&#039;", &[]),
    // OWASP's rule for HTML content.
    ("&quot;", "&#x27;", &[('/', "&#x2F;")]),
    // XML.
    ("&quot;", "&apos;", &[]),
];

/// `percent` with the hex digits of its escapes in lower case (`%2f`).
fn lower_hex(percent: &str) -> String {
    let mut out = String::with_capacity(percent.len());
    let mut left = 0;
    for c in percent.chars() {
        if c == '%' {
            left = 2;
            out.push(c);
        } else if left > 0 {
            left -= 1;
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The base64 characters that `value` alone decides, wherever it starts in
/// a longer encoded text: for each of the three offsets it may start at
/// within a 3-byte group, the characters whose 6 bits all come from it.
fn base64_cores(engine: &impl base64::Engine, value: &[u8]) -> Vec<String> {
    (0..3)
        .map(|k| {
            let mut padded = vec![0u8; k];
            padded.extend_from_slice(value);
            let text = engine.encode(&padded);
            // Bits [8k, 8k + 8n) are the value's; character i holds bits
            // [6i, 6i + 6).
            let first = (8 * k).div_ceil(6);
            let end = (8 * (k + value.len())) / 6;
            text[first..end.min(text.len())].to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value with every sign the encoders disagree on.
    const VALUE: &str = "ab-cd/e f+g=~'<$&:@;,!*()";

    fn encoder(who: &str) -> &'static Percent {
        PERCENT
            .iter()
            .find(|p| p.0.split([':', ',', ';']).any(|part| part.trim() == who))
            .unwrap_or_else(|| panic!("no encoder {who}"))
    }

    /// Each row of the table, held to what that encoder writes for
    /// [`VALUE`] (Python, JavaScript and Java outputs as those runtimes
    /// print them; Go, PHP and .NET from their documented sets), and each
    /// form scrubbed.
    #[test]
    fn each_percent_encoder_writes_as_the_real_one_and_is_scrubbed() {
        let all = forms(VALUE);
        for (who, written) in [
            (
                "Python quote(safe='')",
                "ab-cd%2Fe%20f%2Bg%3D~%27%3C%24%26%3A%40%3B%2C%21%2A%28%29",
            ),
            (
                "Python quote() (safe='/')",
                "ab-cd/e%20f%2Bg%3D~%27%3C%24%26%3A%40%3B%2C%21%2A%28%29",
            ),
            (
                "Python quote_plus",
                "ab-cd%2Fe+f%2Bg%3D~%27%3C%24%26%3A%40%3B%2C%21%2A%28%29",
            ),
            (
                "Go url.PathEscape",
                "ab-cd%2Fe%20f+g=~%27%3C$&:@%3B%2C%21%2A%28%29",
            ),
            (
                "JavaScript encodeURIComponent",
                "ab-cd%2Fe%20f%2Bg%3D~'%3C%24%26%3A%40%3B%2C!*()",
            ),
            ("JavaScript encodeURI", "ab-cd/e%20f+g=~'%3C$&:@;,!*()"),
            (
                "Java URLEncoder",
                "ab-cd%2Fe+f%2Bg%3D%7E%27%3C%24%26%3A%40%3B%2C%21*%28%29",
            ),
            (
                "PHP urlencode",
                "ab-cd%2Fe+f%2Bg%3D%7E%27%3C%24%26%3A%40%3B%2C%21%2A%28%29",
            ),
            (
                ".NET WebUtility.UrlEncode",
                "ab-cd%2Fe+f%2Bg%3D%7E%27%3C%24%26%3A%40%3B%2C!*()",
            ),
            (
                "every byte but letters and digits",
                "ab%2Dcd%2Fe%20f%2Bg%3D%7E%27%3C%24%26%3A%40%3B%2C%21%2A%28%29",
            ),
        ] {
            let p = encoder(who);
            assert_eq!(percent(VALUE, p), written, "{who}");
            for form in [written.to_string(), lower_hex(written), percent(written, p)] {
                assert!(all.contains(&form.into_bytes()), "{who}: a form is missing");
            }
        }
    }

    /// What `fetch` (htmd) writes for text holding the value, and a writer
    /// that escapes every sign.
    #[test]
    fn the_markdown_escaped_forms_are_scrubbed() {
        let all = forms("k3y_with*marks[1]");
        assert!(all.contains(&b"k3y\\_with\\*marks\\[1\\]".to_vec()));
        let all = forms("a-b.c_d");
        assert!(all.contains(&b"a\\-b\\.c\\_d".to_vec()));
        assert!(all.contains(&b"a-b.c\\_d".to_vec()));
    }
}
