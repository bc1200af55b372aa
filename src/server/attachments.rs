//! Attachments: what `POST /api/attachments` accepts (PNG, JPEG, GIF and WebP images, known by their bytes, and
//! UTF-8 text files), kept in the store under the SHA-256 of their bytes; and a send's references to them, checked
//! and turned into the user message's file parts and the bytes its run hands the model.

use sha2::{Digest, Sha256};

use super::chat::{Chat, ChatError, now_ms};
use crate::protocol::{AttachmentLimits, AttachmentRef, ChatMessage, FilePart};
use crate::runtime::attached::{AttachedBytes, AttachedFile};
use crate::store::StoredAttachment;

/// The longest file name kept; a longer one is cut (on a character boundary).
const MAX_NAME_CHARS: usize = 200;

/// Why an upload or a send's attachments were refused; every message names the file.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AttachmentError {
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    Refused(String),
}

/// The image kinds a model takes, by the bytes they start with.
const IMAGE_KINDS: [(&str, &str, &[&str]); 4] = [
    ("image/png", "PNG", &["png"]),
    ("image/jpeg", "JPEG", &["jpg", "jpeg", "jpe", "jfif"]),
    ("image/gif", "GIF", &["gif"]),
    ("image/webp", "WebP", &["webp"]),
];

fn image_kind_of(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// What the file claims to be, by its declared type or else its name's extension: one of our image kinds (its
/// label), another image type, or nothing in particular.
fn claimed_image(name: &str, declared: &str) -> Option<&'static str> {
    let extension = name.rsplit_once('.').map(|(_, extension)| extension.to_ascii_lowercase()).unwrap_or_default();
    IMAGE_KINDS
        .iter()
        .find(|(media_type, _, extensions)| declared == *media_type || extensions.contains(&extension.as_str()))
        .map(|(_, label, _)| *label)
}

/// The media type an upload is kept as: the image kind its bytes are, or `text/plain` for UTF-8 text. Refused: a
/// file whose type or name says image and whose bytes are none of ours, and binary files.
pub fn media_type_of(name: &str, declared: &str, bytes: &[u8]) -> Result<&'static str, AttachmentError> {
    if let Some(kind) = image_kind_of(bytes) {
        return Ok(kind);
    }
    if let Some(label) = claimed_image(name, declared) {
        return Err(AttachmentError::Refused(format!("{name} is not a {label} image: its bytes are not one")));
    }
    if declared.starts_with("image/") {
        return Err(AttachmentError::Refused(format!(
            "{name} is {declared}; only PNG, JPEG, GIF and WebP images can be attached"
        )));
    }
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => Ok("text/plain"),
        Ok(_) | Err(_) => Err(AttachmentError::Refused(format!(
            "{name} is neither an image (PNG, JPEG, GIF, WebP) nor a text file, so it cannot be attached"
        ))),
    }
}

/// A file name as a message shows it: the last path segment, without control characters, at most
/// `MAX_NAME_CHARS`; `None` when nothing is left.
pub fn clean_name(name: &str) -> Option<String> {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = last.chars().filter(|c| !c.is_control()).take(MAX_NAME_CHARS).collect();
    let cleaned = cleaned.trim();
    (!cleaned.is_empty()).then(|| cleaned.to_owned())
}

/// An id as the store keeps them: 64 lower-case hex digits.
pub fn is_attachment_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn id_of(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

impl Chat {
    /// Keeps an uploaded file and says how a message names it.
    pub async fn keep_attachment(&self, name: &str, declared: &str, bytes: Vec<u8>) -> Result<FilePart, ChatError> {
        let name = clean_name(name)
            .ok_or_else(|| ChatError::Attachment(AttachmentError::Refused("`name` must name the file".into())))?;
        if let Some(why) = self.config.attachments.file_refused(&name, bytes.len() as u64) {
            let error = match bytes.is_empty() {
                true => AttachmentError::Refused(why),
                false => AttachmentError::TooLarge(why),
            };
            return Err(ChatError::Attachment(error));
        }
        let media_type = media_type_of(&name, declared, &bytes).map_err(ChatError::Attachment)?;
        let stored = StoredAttachment { id: id_of(&bytes), media_type: media_type.to_owned(), bytes };
        self.store.put_attachment(&stored, now_ms()).await?;
        Ok(FilePart { size: stored.bytes.len() as u64, id: stored.id, name, media_type: media_type.to_owned() })
    }

    /// The file parts a send's attachments make, each checked to be kept here, and the message within its limits.
    pub(super) async fn attachment_parts(&self, refs: &[AttachmentRef]) -> Result<Vec<FilePart>, ChatError> {
        let limits: &AttachmentLimits = &self.config.attachments;
        let refused = |why: String| ChatError::Attachment(AttachmentError::Refused(why));
        let mut parts = Vec::with_capacity(refs.len());
        for reference in refs {
            let name =
                clean_name(&reference.name).ok_or_else(|| refused("every attachment needs a `name`".to_owned()))?;
            let meta = match is_attachment_id(&reference.id) {
                true => self.store.attachment_meta(&reference.id).await?,
                false => None,
            };
            let Some(meta) = meta else {
                return Err(refused(format!(
                    "{name} is not kept on this server (its id {:?} is unknown): upload it with POST /api/attachments \
                     first",
                    reference.id
                )));
            };
            parts.push(FilePart { id: reference.id.clone(), name, media_type: meta.media_type, size: meta.size });
        }
        let total = parts.iter().map(|part| part.size).sum();
        if let Some(why) = limits.message_refused(parts.len(), total) {
            return Err(ChatError::Attachment(AttachmentError::TooLarge(why)));
        }
        Ok(parts)
    }

    /// The files of `parts` with their bytes, for the run's model; a file no longer kept is refused by name.
    pub(super) async fn attached_files(&self, parts: &[FilePart]) -> Result<Vec<AttachedFile>, ChatError> {
        let mut files = Vec::with_capacity(parts.len());
        for part in parts {
            let Some(stored) = self.store.attachment(&part.id).await? else {
                return Err(ChatError::Attachment(AttachmentError::Refused(format!(
                    "{} is no longer kept on this server",
                    part.name
                ))));
            };
            files.push(AttachedFile {
                name: part.name.clone(),
                media_type: stored.media_type,
                bytes: stored.bytes.into(),
            });
        }
        Ok(files)
    }

    /// The bytes of every file the messages attach, for a runtime that rebuilds the model's view from them.
    pub(super) async fn attached_bytes(&self, messages: &[ChatMessage]) -> Result<AttachedBytes, ChatError> {
        let mut bytes = AttachedBytes::new();
        for part in messages.iter().flat_map(ChatMessage::files) {
            if bytes.contains_key(&part.id) {
                continue;
            }
            if let Some(stored) = self.store.attachment(&part.id).await? {
                bytes.insert(part.id.clone(), stored.bytes.into());
            }
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn images_are_known_by_their_bytes() {
        assert_eq!(media_type_of("a.png", "image/png", PNG), Ok("image/png"));
        assert_eq!(media_type_of("a.jpg", "image/jpeg", &[0xff, 0xd8, 0xff, 0xe0]), Ok("image/jpeg"));
        assert_eq!(media_type_of("a.gif", "", b"GIF89a...."), Ok("image/gif"));
        assert_eq!(media_type_of("a.webp", "image/webp", b"RIFF\x10\0\0\0WEBPVP8 "), Ok("image/webp"));
        // A photo saved with the wrong extension is what its bytes say.
        assert_eq!(media_type_of("photo.jpg", "image/jpeg", PNG), Ok("image/png"));
    }

    #[test]
    fn a_file_that_claims_to_be_an_image_and_is_not_is_refused_by_name() {
        let error = media_type_of("cat.png", "image/png", b"hello").unwrap_err();
        assert_eq!(error, AttachmentError::Refused("cat.png is not a PNG image: its bytes are not one".into()));
        let by_extension = media_type_of("cat.webp", "", b"hello").unwrap_err();
        assert!(by_extension.to_string().contains("cat.webp is not a WebP image"), "{by_extension}");
        let svg = media_type_of("logo.svg", "image/svg+xml", b"<svg/>").unwrap_err();
        assert!(svg.to_string().contains("logo.svg is image/svg+xml; only PNG"), "{svg}");
    }

    #[test]
    fn text_is_utf8_without_nul_bytes() {
        assert_eq!(media_type_of("main.rs", "", b"fn main() {}\n"), Ok("text/plain"));
        assert_eq!(media_type_of("data.json", "application/json", b"{}"), Ok("text/plain"));
        let binary = media_type_of("a.out", "application/octet-stream", b"\x7fELF\0\0").unwrap_err();
        assert!(binary.to_string().starts_with("a.out is neither an image"), "{binary}");
        assert!(media_type_of("latin1.txt", "text/plain", b"caf\xe9").is_err());
    }

    #[test]
    fn names_lose_their_directories_and_control_characters() {
        assert_eq!(clean_name("../../etc/passwd").as_deref(), Some("passwd"));
        assert_eq!(clean_name("C:\\Users\\me\\shot.png").as_deref(), Some("shot.png"));
        assert_eq!(clean_name("a\nb\u{7}.txt").as_deref(), Some("ab.txt"));
        assert_eq!(clean_name(" / ").as_deref(), None);
        assert_eq!(clean_name(&"x".repeat(300)).map(|name| name.len()), Some(MAX_NAME_CHARS));
    }

    #[test]
    fn ids_are_sha256_in_hex() {
        let id = id_of(b"abc");
        assert_eq!(id, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert!(is_attachment_id(&id));
        assert!(!is_attachment_id("../x"));
        assert!(!is_attachment_id(&id.to_uppercase()));
    }
}
