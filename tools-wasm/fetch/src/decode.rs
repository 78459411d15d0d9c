//! Content codings a server may send whatever was asked (`gzip`,
//! `deflate`, `br`), undone before a page is read, and bounded: what a
//! small compressed body expands to is held to the same cap as any body.

use std::io::Read;

use crate::ToolError;

/// `body` as it was before the codings `encoding` (a `Content-Encoding`
/// value, applied in the order listed) were applied to it, at most `cap`
/// bytes; `url` names the page in errors.
pub fn decode(body: Vec<u8>, encoding: &str, cap: usize, url: &str) -> Result<Vec<u8>, ToolError> {
    let codings: Vec<String> = encoding
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| !c.is_empty() && c != "identity")
        .collect();
    let mut body = body;
    for coding in codings.iter().rev() {
        let reader: Box<dyn Read + '_> = match coding.as_str() {
            "gzip" | "x-gzip" => Box::new(flate2::read::MultiGzDecoder::new(&body[..])),
            // `deflate` is zlib-wrapped by the standard; some servers send
            // it raw.
            "deflate" if looks_zlib(&body) => Box::new(flate2::read::ZlibDecoder::new(&body[..])),
            "deflate" => Box::new(flate2::read::DeflateDecoder::new(&body[..])),
            "br" => Box::new(brotli_decompressor::Decompressor::new(&body[..], 4096)),
            other => {
                return Err(ToolError::Failed(format!(
                    "the response from {url} is in the coding `{other}`, which fetch cannot \
                     decode (it reads gzip, deflate and br)"
                )));
            }
        };
        let mut out = Vec::new();
        reader
            .take(cap as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| {
                ToolError::Failed(format!(
                    "the response from {url} says it is {coding}-compressed but does not \
                     decompress: {e}"
                ))
            })?;
        if out.len() > cap {
            return Err(ToolError::Failed(format!(
                "the response from {url} decompresses to more than {} MiB, the most fetch \
                 reads",
                cap >> 20
            )));
        }
        body = out;
    }
    Ok(body)
}

/// Whether `body` starts with a zlib header (RFC 1950: method 8, and the
/// first two bytes a multiple of 31).
fn looks_zlib(body: &[u8]) -> bool {
    body.len() >= 2
        && body[0] & 0x0f == 8
        && (u16::from(body[0]) << 8 | u16::from(body[1])) % 31 == 0
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const TEXT: &str = "<h1>Compressed</h1><p>the page, as the server wrote it</p>";

    fn gzip(b: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn gzip_deflate_and_brotli_are_undone() {
        assert_eq!(
            decode(gzip(TEXT.as_bytes()), "gzip", 1 << 20, "u").unwrap(),
            TEXT.as_bytes()
        );
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(TEXT.as_bytes()).unwrap();
        assert_eq!(
            decode(z.finish().unwrap(), "deflate", 1 << 20, "u").unwrap(),
            TEXT.as_bytes()
        );
        let mut d = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        d.write_all(TEXT.as_bytes()).unwrap();
        assert_eq!(
            decode(d.finish().unwrap(), "deflate", 1 << 20, "u").unwrap(),
            TEXT.as_bytes()
        );
        // A brotli stream (RFC 7932) of `hello`.
        let br = [0x0b, 0x02, 0x80, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x03];
        assert_eq!(decode(br.to_vec(), "br", 1 << 20, "u").unwrap(), b"hello");
        // Two codings, undone last first; identity is nothing.
        let twice = gzip(&gzip(TEXT.as_bytes()));
        assert_eq!(
            decode(twice, "gzip, identity, gzip", 1 << 20, "u").unwrap(),
            TEXT.as_bytes()
        );
        assert_eq!(
            decode(b"as is".to_vec(), "identity", 1 << 20, "u").unwrap(),
            b"as is"
        );
    }

    #[test]
    fn a_bomb_unknown_coding_or_broken_body_is_an_error_that_says_so() {
        let bomb = gzip(&vec![0u8; 3 << 20]);
        assert!(bomb.len() < 64 << 10);
        let e = decode(bomb, "gzip", 2 << 20, "u").unwrap_err();
        assert_eq!(
            e,
            ToolError::Failed(
                "the response from u decompresses to more than 2 MiB, the most fetch reads".into()
            )
        );
        let e = decode(b"x".to_vec(), "zstd", 1 << 20, "u").unwrap_err();
        assert!(
            matches!(&e, ToolError::Failed(m) if m.contains("the coding `zstd`")),
            "{e:?}"
        );
        let e = decode(b"not gzip".to_vec(), "gzip", 1 << 20, "u").unwrap_err();
        assert!(
            matches!(&e, ToolError::Failed(m) if m.contains("does not decompress")),
            "{e:?}"
        );
    }
}
