//! The composer's attachments: files picked with the Attach button, dropped on the composer or pasted into the
//! message box are checked against the server's limits, uploaded at once and shown as chips (images as
//! thumbnails) that can be removed until the message is sent. A file refused here or by the server is named in the
//! composer's note; nothing is dropped silently.

use leptos::prelude::*;

use crate::i18n::LiveText;
use crate::protocol::{AttachmentLimits, AttachmentRef, FilePart};

mod admit;
mod chips;
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
mod chunk;

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
pub use self::chunk::{ATTACH_UI, AttachUi, arrived, chips, take};

/// The server takes no files and draws no chips: nothing is picked while it renders.
#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
pub fn take(attachments: Attachments, files: Vec<Picked>, upload: Upload) {
    admit::take(attachments, files, upload);
}

#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
pub fn chips(attachments: Attachments) -> impl IntoView {
    chips::build_chips(attachments)
}

/// A file the browser hands over: the DOM's `File` in the browser; the server renders no picked files.
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
pub type PickedFile = leptos::web_sys::File;
#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
pub type PickedFile = ();

/// Where an upload's outcome goes: the kept file, or why the server refused it.
pub type UploadReply = Callback<Result<FilePart, String>>;

/// Uploads a picked file; the page does it and answers through the reply.
pub type Upload = Callback<(PickedFile, UploadReply)>;

/// One chip: a file on its way up, or kept by the server and ready to go with the message.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub key: u64,
    pub name: String,
    pub size: u64,
    pub uploaded: Option<FilePart>,
}

/// The draft's attachments.
#[derive(Clone, Copy)]
pub struct Attachments {
    pub list: RwSignal<Vec<Pending>>,
    next_key: StoredValue<u64>,
    limits: Signal<AttachmentLimits>,
    note: RwSignal<Option<LiveText>>,
}

impl Attachments {
    pub fn new(limits: Signal<AttachmentLimits>, note: RwSignal<Option<LiveText>>) -> Attachments {
        Attachments { list: RwSignal::new(Vec::new()), next_key: StoredValue::new(0), limits, note }
    }

    /// What a send carries: the files the server has kept.
    pub fn refs(&self) -> Vec<AttachmentRef> {
        self.list.with_untracked(|list| {
            list.iter()
                .filter_map(|pending| pending.uploaded.as_ref())
                .map(|file| AttachmentRef { id: file.id.clone(), name: file.name.clone() })
                .collect()
        })
    }

    pub fn is_empty(&self) -> bool {
        self.list.with(Vec::is_empty)
    }

    pub fn is_uploading(&self) -> bool {
        self.list.with(|list| list.iter().any(|pending| pending.uploaded.is_none()))
    }

    pub fn clear(&self) {
        self.list.set(Vec::new());
    }

    pub fn remove(&self, key: u64) {
        self.list.update(|list| list.retain(|pending| pending.key != key));
    }
}

/// A picked file with its name and size.
pub type Picked = (PickedFile, String, u64);

/// The files of a `FileList` (an input's, a drop's, a paste's) with their names and sizes.
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
fn listed(list: Option<leptos::web_sys::FileList>) -> Vec<Picked> {
    let Some(list) = list else { return Vec::new() };
    (0..list.length())
        .filter_map(|index| list.item(index))
        .map(|file| {
            let (name, size) = (file.name(), file.size() as u64);
            (file, name, size)
        })
        .collect()
}

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
pub fn pasted(event: &leptos::ev::ClipboardEvent) -> Vec<Picked> {
    listed(event.clipboard_data().and_then(|data| data.files()))
}

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
pub fn dropped(event: &leptos::ev::DragEvent) -> Vec<Picked> {
    listed(event.data_transfer().and_then(|data| data.files()))
}

/// The input's files; the input is emptied, so the same file can be picked again after it was removed.
#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
pub fn picked(input: &leptos::web_sys::HtmlInputElement) -> Vec<Picked> {
    let files = listed(input.files());
    input.set_value("");
    files
}

/// The server runs no handlers: nothing is ever picked there.
#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
pub fn pasted(_event: &leptos::ev::ClipboardEvent) -> Vec<Picked> {
    Vec::new()
}

#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
pub fn dropped(_event: &leptos::ev::DragEvent) -> Vec<Picked> {
    Vec::new()
}

#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
pub fn picked(_input: &leptos::web_sys::HtmlInputElement) -> Vec<Picked> {
    Vec::new()
}
