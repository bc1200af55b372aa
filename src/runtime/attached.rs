//! Files the user attached to a message, as a runtime hands them to a model: images as images, text files as
//! fenced blocks after the message's text, each under its name.

use std::collections::HashMap;
use std::sync::Arc;

use super::provider::{ModelImage, ModelMessage};
use crate::protocol::{ChatMessage, FilePart};

/// One attached file with its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachedFile {
    pub name: String,
    pub media_type: String,
    pub bytes: Arc<[u8]>,
}

/// What the user sent to start a run: the text and the files attached to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prompt {
    pub text: String,
    pub files: Vec<AttachedFile>,
}

impl From<String> for Prompt {
    fn from(text: String) -> Prompt {
        Prompt { text, files: Vec::new() }
    }
}

impl From<&str> for Prompt {
    fn from(text: &str) -> Prompt {
        Prompt::from(text.to_owned())
    }
}

/// The bytes of the files a transcript's messages name, by `FilePart::id`: what a runtime that rebuilds the
/// model's view from the transcript needs besides the transcript.
pub type AttachedBytes = HashMap<String, Arc<[u8]>>;

/// The error code of a run whose model cannot see the images it was sent.
pub const IMAGES_UNSUPPORTED: &str = "images_unsupported";

impl AttachedFile {
    pub fn is_image(&self) -> bool {
        self.media_type.starts_with("image/")
    }

    /// The file of `part`, if its bytes are among `bytes`.
    pub fn of_part(part: &FilePart, bytes: &AttachedBytes) -> Option<AttachedFile> {
        let bytes = bytes.get(&part.id)?.clone();
        Some(AttachedFile { name: part.name.clone(), media_type: part.media_type.clone(), bytes })
    }
}

/// Why a model that takes no images cannot answer a message that has some; `model` names it for the user.
pub fn images_refused(model: &str, files: &[AttachedFile]) -> Option<String> {
    let images: Vec<&str> = files.iter().filter(|file| file.is_image()).map(|file| file.name.as_str()).collect();
    (!images.is_empty()).then(|| {
        format!(
            "{model} does not take images, so it cannot see {}: pick a model that does, or send the message \
             without them",
            images.join(", ")
        )
    })
}

/// `text` with each text file after it as a fenced block under its name. The fence is longer than any run of
/// backticks in the file, so a file with fences of its own stays one block.
pub fn with_text_files(text: &str, files: &[AttachedFile]) -> String {
    let mut out = text.to_owned();
    for file in files.iter().filter(|file| !file.is_image()) {
        let content = String::from_utf8_lossy(&file.bytes);
        let fence = "`".repeat(longest_backtick_run(&content).max(2) + 1);
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        let newline = if content.ends_with('\n') { "" } else { "\n" };
        out.push_str(&format!("{fence}{}\n{content}{newline}{fence}", file.name));
    }
    out
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// The model's user message of `text` and `files`.
pub fn user_message(text: &str, files: &[AttachedFile]) -> ModelMessage {
    let images = files
        .iter()
        .filter(|file| file.is_image())
        .map(|file| ModelImage {
            name: file.name.clone(),
            media_type: file.media_type.clone(),
            bytes: file.bytes.clone(),
        })
        .collect();
    ModelMessage::User { text: with_text_files(text, files), images }
}

/// The files of a logged user message whose bytes are among `bytes`; a file whose bytes are gone is named in the
/// text instead, so the model still knows it was there.
pub fn files_of(message: &ChatMessage, bytes: &AttachedBytes) -> (Vec<AttachedFile>, Vec<String>) {
    let mut files = Vec::new();
    let mut missing = Vec::new();
    for part in message.files() {
        match AttachedFile::of_part(part, bytes) {
            Some(file) => files.push(file),
            None => missing.push(format!("[the attached file {} is no longer stored]", part.name)),
        }
    }
    (files, missing)
}

/// Images replaced by a note naming them, for a model that takes none: earlier messages keep their place in the
/// conversation when the user switches to such a model.
pub fn without_images(messages: &[ModelMessage]) -> Vec<ModelMessage> {
    messages
        .iter()
        .map(|message| match message {
            ModelMessage::User { text, images } if !images.is_empty() => {
                let names: Vec<&str> = images.iter().map(|image| image.name.as_str()).collect();
                let note = format!("[images left out, this model takes none: {}]", names.join(", "));
                ModelMessage::user(if text.is_empty() { note } else { format!("{text}\n\n{note}") })
            }
            other => other.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, media_type: &str, bytes: &[u8]) -> AttachedFile {
        AttachedFile { name: name.into(), media_type: media_type.into(), bytes: bytes.into() }
    }

    #[test]
    fn text_files_follow_the_text_as_fenced_blocks_under_their_names() {
        let files = [file("notes.txt", "text/plain", b"one\ntwo\n"), file("a.png", "image/png", b"\x89PNG")];
        assert_eq!(with_text_files("look", &files), "look\n\n```notes.txt\none\ntwo\n```");
        assert_eq!(with_text_files("", &files[..1]), "```notes.txt\none\ntwo\n```");
    }

    #[test]
    fn a_file_with_fences_of_its_own_gets_a_longer_fence() {
        let files = [file("README.md", "text/plain", b"```rust\nfn main() {}\n```")];
        assert_eq!(with_text_files("", &files), "````README.md\n```rust\nfn main() {}\n```\n````");
    }

    #[test]
    fn images_go_with_the_message_and_text_files_into_its_text() {
        let files = [file("a.png", "image/png", b"\x89PNG"), file("b.txt", "text/plain", b"hi")];
        let ModelMessage::User { text, images } = user_message("see", &files) else { panic!("a user message") };
        assert_eq!(text, "see\n\n```b.txt\nhi\n```");
        assert_eq!(images.len(), 1);
        assert_eq!((images[0].name.as_str(), images[0].media_type.as_str()), ("a.png", "image/png"));
    }

    #[test]
    fn a_model_without_images_is_told_which_were_left_out() {
        let messages = [user_message("see", &[file("a.png", "image/png", b"x")]), ModelMessage::user("plain")];
        let stripped = without_images(&messages);
        assert_eq!(stripped[0], ModelMessage::user("see\n\n[images left out, this model takes none: a.png]"));
        assert_eq!(stripped[1], messages[1]);
        assert!(images_refused("m", &[file("b.txt", "text/plain", b"x")]).is_none());
        let refused = images_refused("m", &[file("a.png", "image/png", b"x")]).expect("refused");
        assert!(refused.contains("a.png"), "{refused}");
    }
}
