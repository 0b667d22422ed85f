//! Stored files shared by avatars and project uploads: safe file names, content types by
//! extension, and writing under `DATA_DIR/uploads/<tenant>/...`.

use std::path::PathBuf;

use crate::http::request::Api;
use crate::services::projects;

/// Image types by extension (what avatars accept and uploads embed with `![..](..)`).
pub const IMAGE_TYPES: &[(&str, &str)] = &[
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("bmp", "image/bmp"),
    ("tiff", "image/tiff"),
    ("ico", "image/vnd.microsoft.icon"),
    ("webp", "image/webp"),
];

/// Video types GitLab embeds like images.
const VIDEO_TYPES: &[(&str, &str)] = &[
    ("mp4", "video/mp4"),
    ("m4v", "video/mp4"),
    ("mov", "video/quicktime"),
    ("webm", "video/webm"),
    ("ogv", "video/ogg"),
];

/// Other types served as themselves; anything else is `application/octet-stream`.
const OTHER_TYPES: &[(&str, &str)] = &[
    ("txt", "text/plain; charset=utf-8"),
    ("log", "text/plain; charset=utf-8"),
    ("md", "text/plain; charset=utf-8"),
    ("pdf", "application/pdf"),
    ("zip", "application/zip"),
    ("json", "application/json"),
];

/// The lower-cased extension of `name` ("" when none).
pub fn extension(name: &str) -> String {
    name.rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default()
}

pub fn is_image(name: &str) -> bool {
    let ext = extension(name);
    IMAGE_TYPES.iter().any(|(e, _)| *e == ext)
}

/// The image type `bytes` start with, by their magic numbers: what an avatar's content must
/// be, whatever its name says (a `.png` holding HTML or SVG is refused).
pub fn sniff_image(bytes: &[u8]) -> Option<&'static str> {
    const SIGNATURES: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "image/png"),
        (b"\xff\xd8\xff", "image/jpeg"),
        (b"GIF87a", "image/gif"),
        (b"GIF89a", "image/gif"),
        (b"BM", "image/bmp"),
        (b"II*\0", "image/tiff"),
        (b"MM\0*", "image/tiff"),
        (b"\0\0\x01\0", "image/vnd.microsoft.icon"),
    ];
    if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        return Some("image/webp");
    }
    SIGNATURES
        .iter()
        .find(|(magic, _)| bytes.starts_with(magic))
        .map(|(_, kind)| *kind)
}

/// Whether `bytes` are an image of the type `name`'s extension says.
pub fn is_image_content(name: &str, bytes: &[u8]) -> bool {
    is_image(name) && sniff_image(bytes) == Some(content_type(name))
}

/// Images and videos, which markdown embeds.
pub fn is_embeddable(name: &str) -> bool {
    let ext = extension(name);
    is_image(name) || VIDEO_TYPES.iter().any(|(e, _)| *e == ext)
}

/// The type a stored file is served with, by its extension.
pub fn content_type(name: &str) -> &'static str {
    let ext = extension(name);
    IMAGE_TYPES
        .iter()
        .chain(VIDEO_TYPES)
        .chain(OTHER_TYPES)
        .find(|(e, _)| *e == ext)
        .map_or("application/octet-stream", |(_, t)| t)
}

/// `DATA_DIR/uploads/<tenant>/<relative>`.
pub fn directory(api: &Api, relative: &str) -> PathBuf {
    projects::uploads_dir(&api.ctx.config.storage.data_dir, api.tenant.id, relative)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_recognised_by_content() {
        assert!(is_image_content("a.png", b"\x89PNG\r\n\x1a\n...."));
        assert!(is_image_content("a.JPG", b"\xff\xd8\xff\xe0...."));
        assert!(is_image_content("a.webp", b"RIFF\0\0\0\0WEBPVP8 "));
        assert!(is_image_content("a.ico", b"\0\0\x01\0\x01\0"));
        // the name and the content must agree
        assert!(!is_image_content("a.png", b"GIF89a...."));
        assert!(!is_image_content("a.png", b"<svg onload=alert(1)>"));
        assert!(!is_image_content("a.txt", b"\x89PNG\r\n\x1a\n"));
        assert!(!is_image_content("a.webp", b"RIFF\0\0\0\0WAVE"));
    }
}
