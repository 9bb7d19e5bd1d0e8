//! A chat message's content parts: `text` parts joined, and, for a vision-language model,
//! OpenAI's `image_url` parts taken from `data:` URLs (PNG or JPEG, base64) — never fetched —
//! and read by the checkpoint's own processor as the agent loop reads a screenshot
//! (`VisionSide::read_image`), each written in the text as the model's image placeholder. Every
//! part the server cannot honour is refused with its place in `param`.

use std::io::Cursor;

use base64::Engine as _;
use serde_json::Value as Json;
use wrl_trainer::Role;
use wrl_trainer::vision::{IMAGE_PLACEHOLDER, Pixels, VisionSide};

use crate::error::ApiError;

/// Most pixels (width × height) an image may have before it is decoded: 16 megapixels (4096 ×
/// 4096). The processor then resizes it to its own pixel budget.
pub(crate) const MAX_IMAGE_PIXELS: u64 = 4096 * 4096;

/// An image part of a request, its bytes decoded from its data URL, not yet read as an image.
#[derive(Debug)]
pub(crate) struct ImagePart {
    /// Where it stands: `messages[1].content[0].image_url.url`.
    pub(crate) param: String,
    pub(crate) bytes: Vec<u8>,
}

/// The text of message `i`'s content `parts` (parts joined by a newline, each image written as
/// [`IMAGE_PLACEHOLDER`] where it stands) and its image parts in order. `sees`: the model reads
/// images; images belong to user messages, as OpenAI has it.
pub(crate) fn content_parts(
    i: usize,
    parts: &[Json],
    role: Role,
    sees: bool,
) -> Result<(String, Vec<ImagePart>), ApiError> {
    let mut pieces: Vec<String> = Vec::with_capacity(parts.len());
    let mut images = Vec::new();
    for (j, p) in parts.iter().enumerate() {
        let part = format!("messages[{i}].content[{j}]");
        match p.get("type").and_then(Json::as_str) {
            Some("text") => {
                let t = p.get("text").and_then(Json::as_str).ok_or_else(|| {
                    ApiError::invalid(
                        "invalid_value",
                        format!("{part}.text"),
                        format!("`{part}.text` must be a string"),
                    )
                })?;
                pieces.push(t.to_string());
            }
            Some("image_url") if !sees => {
                return Err(ApiError::invalid(
                    "unsupported_content",
                    format!("{part}.type"),
                    format!(
                        "`{part}` is `image_url`; this model reads text only (serve a \
                         vision-language checkpoint to send images)"
                    ),
                ));
            }
            Some("image_url") if role != Role::User => {
                return Err(ApiError::invalid(
                    "invalid_value",
                    format!("{part}.type"),
                    format!("`{part}` is an image; images belong to `user` messages"),
                ));
            }
            Some("image_url") => {
                images.push(image_part(&part, p)?);
                pieces.push(IMAGE_PLACEHOLDER.to_string());
            }
            Some(other) => {
                return Err(ApiError::invalid(
                    "unsupported_content",
                    format!("{part}.type"),
                    format!(
                        "`{part}` is `{other}`; this server reads `text` parts{}",
                        if sees {
                            " and `image_url` parts"
                        } else {
                            " (this model reads text only)"
                        }
                    ),
                ));
            }
            None => {
                return Err(ApiError::invalid(
                    "invalid_value",
                    format!("{part}.type"),
                    format!("`{part}.type` is required"),
                ));
            }
        }
    }
    Ok((pieces.join("\n"), images))
}

/// An `image_url` part: its `url` a data URL, its `detail` (if any) `auto`.
fn image_part(part: &str, p: &Json) -> Result<ImagePart, ApiError> {
    let at = format!("{part}.image_url");
    let obj = p.get("image_url").and_then(Json::as_object).ok_or_else(|| {
        ApiError::invalid("invalid_value", &at, format!("`{at}` must be an object with a `url`"))
    })?;
    if let Some(k) = obj.keys().find(|k| !matches!(k.as_str(), "url" | "detail")) {
        return Err(ApiError::invalid(
            "unknown_parameter",
            format!("{at}.{k}"),
            format!("unrecognized argument `{at}.{k}`; an image has `url` and `detail`"),
        ));
    }
    match obj.get("detail").filter(|d| !d.is_null()) {
        None => {}
        Some(Json::String(d)) if d == "auto" => {}
        Some(d) => {
            return Err(ApiError::invalid(
                "unsupported_parameter",
                format!("{at}.detail"),
                format!(
                    "`{at}.detail` {d} is not honoured: the model's processor sizes every image \
                     to its own pixel budget; send \"auto\" or omit it"
                ),
            ));
        }
    }
    let param = format!("{at}.url");
    let url = obj.get("url").and_then(Json::as_str).ok_or_else(|| {
        ApiError::invalid("invalid_value", &param, format!("`{param}` must be a string"))
    })?;
    let bytes = data_url(&param, url)?;
    Ok(ImagePart { param, bytes })
}

/// The bytes of a `data:image/png;base64,…` or `data:image/jpeg;base64,…` URL; any other URL
/// is refused, an `http(s)` one by name: nothing is fetched.
fn data_url(param: &str, url: &str) -> Result<Vec<u8>, ApiError> {
    let bad = |why: String| ApiError::invalid("invalid_image_url", param, why);
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Err(bad(format!(
            "`{param}` is an http(s) URL, which is not fetched: send the image as a data URL \
             (`data:image/png;base64,…`)"
        )));
    }
    let Some(rest) = url.strip_prefix("data:") else {
        return Err(bad(format!(
            "`{param}` is not a data URL: send the image as `data:image/png;base64,…` or \
             `data:image/jpeg;base64,…`"
        )));
    };
    let Some((header, data)) = rest.split_once(',') else {
        return Err(bad(format!("`{param}` is a data URL without a `,` before its data")));
    };
    let mut header = header.split(';');
    let media = header.next().unwrap_or("").to_ascii_lowercase();
    if !matches!(media.as_str(), "image/png" | "image/jpeg") {
        return Err(bad(format!(
            "`{param}` is of type `{media}`; send a PNG or JPEG image (`image/png`, `image/jpeg`)"
        )));
    }
    if !header.any(|p| p.eq_ignore_ascii_case("base64")) {
        return Err(bad(format!("`{param}` is not base64: send `data:{media};base64,…`")));
    }
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| bad(format!("`{param}` does not decode as base64: {e}")))
}

/// The image of `part` as the model's processor reads it: its size read first (zero or more
/// than [`MAX_IMAGE_PIXELS`] is refused before decoding), then the checkpoint's own
/// `read_image`, whose resize may refuse it too (a side too small, an aspect ratio over 200).
pub(crate) fn read(side: &VisionSide, part: &ImagePart) -> Result<Pixels, ApiError> {
    let param = &part.param;
    let bad = |why: String| ApiError::invalid("invalid_image", param, why);
    let reader = image::ImageReader::new(Cursor::new(&part.bytes))
        .with_guessed_format()
        .map_err(|e| bad(format!("`{param}` cannot be read: {e}")))?;
    if !matches!(reader.format(), Some(image::ImageFormat::Png | image::ImageFormat::Jpeg)) {
        return Err(bad(format!("`{param}` is not a PNG or JPEG image")));
    }
    let (w, h) = match reader.into_dimensions() {
        Ok(size) => size,
        // The PNG decoder refuses a zero side in its header before saying so.
        Err(e) => match png_header_size(&part.bytes) {
            Some((w, h)) if w == 0 || h == 0 => (w, h),
            _ => return Err(bad(format!("`{param}` is not an image that decodes: {e}"))),
        },
    };
    if w == 0 || h == 0 {
        return Err(bad(format!("`{param}` is an image of zero size ({w} × {h})")));
    }
    if u64::from(w) * u64::from(h) > MAX_IMAGE_PIXELS {
        return Err(bad(format!(
            "`{param}` is an image of {w} × {h} pixels; this server reads at most \
             {MAX_IMAGE_PIXELS} pixels (4096 × 4096) an image"
        )));
    }
    side.read_image(&part.bytes).map_err(|e| bad(format!("`{param}`: {e}")))
}

/// The width and height a PNG's `IHDR` chunk states, when `bytes` open with one.
fn png_header_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let sig = b"\x89PNG\r\n\x1a\n";
    let word = |at: usize| bytes.get(at..at + 4).and_then(|b| <[u8; 4]>::try_from(b).ok());
    if !bytes.starts_with(sig) || bytes.get(12..16) != Some(b"IHDR".as_slice()) {
        return None;
    }
    Some((u32::from_be_bytes(word(16)?), u32::from_be_bytes(word(20)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_urls_are_decoded_and_other_urls_refused() {
        assert_eq!(data_url("u", "data:image/png;base64,AAEC").unwrap(), vec![0, 1, 2]);
        assert_eq!(data_url("u", "data:image/JPEG;base64,AAEC").unwrap(), vec![0, 1, 2]);
        for (url, says) in [
            ("https://example.com/a.png", "not fetched"),
            ("HTTP://example.com/a.png", "not fetched"),
            ("file:///etc/passwd", "not a data URL"),
            ("data:image/png;base64", "without a `,`"),
            ("data:image/gif;base64,AAEC", "`image/gif`"),
            ("data:image/png,rawbytes", "not base64"),
            ("data:image/png;base64,@@@@", "does not decode"),
        ] {
            let e = data_url("u", url).unwrap_err();
            assert!(e.message.contains(says), "{url}: {}", e.message);
            assert_eq!(e.param.as_deref(), Some("u"));
        }
    }

    #[test]
    fn parts_are_joined_with_images_as_placeholders() {
        let parts: Vec<Json> = serde_json::from_str(
            r#"[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA==","detail":"auto"}},{"type":"text","text":"b"}]"#,
        )
        .unwrap();
        let (text, images) = content_parts(2, &parts, Role::User, true).unwrap();
        assert_eq!(text, format!("a\n{IMAGE_PLACEHOLDER}\nb"));
        assert_eq!(images.len(), 1);
        assert_eq!(images[0].param, "messages[2].content[1].image_url.url");
        let e = content_parts(2, &parts, Role::User, false).unwrap_err();
        assert!(e.message.contains("reads text only"), "{}", e.message);
        let e = content_parts(2, &parts, Role::Assistant, true).unwrap_err();
        assert!(e.message.contains("belong to `user`"), "{}", e.message);
        let low: Vec<Json> = serde_json::from_str(
            r#"[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA==","detail":"low"}}]"#,
        )
        .unwrap();
        let e = content_parts(0, &low, Role::User, true).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("messages[0].content[0].image_url.detail"));
        let audio: Vec<Json> = serde_json::from_str(r#"[{"type":"input_audio"}]"#).unwrap();
        let e = content_parts(0, &audio, Role::User, true).unwrap_err();
        assert_eq!(e.code, "unsupported_content");
    }
}
