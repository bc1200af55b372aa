//! The composer's attachments: files picked with the Attach button, dropped on the composer or pasted into the
//! message box are checked against the server's limits, uploaded at once and shown as chips (images as
//! thumbnails) that can be removed until the message is sent. A file refused here or by the server is named in the
//! composer's note; nothing is dropped silently.

use leptos::prelude::*;

use crate::i18n::{Key, fill, tr};
use crate::protocol::{AttachmentLimits, AttachmentRef, FilePart, byte_size};

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
    note: RwSignal<Option<String>>,
}

impl Attachments {
    pub fn new(limits: Signal<AttachmentLimits>, note: RwSignal<Option<String>>) -> Attachments {
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

    /// Admits the files (name and size) the limits allow, each as a chip on its way up, and says in the note why the
    /// others were refused; the key of each admitted file, `None` for a refused one.
    pub fn admit(&self, picked: &[(String, u64)]) -> Vec<Option<u64>> {
        let limits = self.limits.get_untracked();
        let mut refused = Vec::new();
        let keys = picked
            .iter()
            .map(|(name, size)| {
                let (count, total) =
                    self.list.with_untracked(|list| (list.len(), list.iter().map(|pending| pending.size).sum::<u64>()));
                let why =
                    file_refused(&limits, name, *size).or_else(|| message_refused(&limits, count + 1, total + size));
                if let Some(why) = why {
                    refused.push(why);
                    return None;
                }
                let key = self.next_key.get_value();
                self.next_key.set_value(key + 1);
                self.list.update(|list| list.push(Pending { key, name: name.clone(), size: *size, uploaded: None }));
                Some(key)
            })
            .collect();
        if !refused.is_empty() {
            self.note.set(Some(refused.join(" · ")));
        }
        keys
    }

    /// The server's answer to an upload: the chip is ready, or gone with the reason in the note. A chip removed
    /// while its upload ran stays removed.
    pub fn uploaded(&self, key: u64, outcome: Result<FilePart, String>) {
        match outcome {
            Ok(file) => self.list.update(|list| {
                if let Some(pending) = list.iter_mut().find(|pending| pending.key == key) {
                    pending.uploaded = Some(file);
                }
            }),
            Err(why) => {
                self.remove(key);
                self.note.set(Some(why));
            }
        }
    }

    /// Admits the picked files and uploads those admitted.
    pub fn take(&self, files: Vec<Picked>, upload: Upload) {
        let described: Vec<(String, u64)> = files.iter().map(|(_, name, size)| (name.clone(), *size)).collect();
        let keys = self.admit(&described);
        let this = *self;
        for ((file, _, _), key) in files.into_iter().zip(keys) {
            if let Some(key) = key {
                upload.run((file, Callback::new(move |outcome| this.uploaded(key, outcome))));
            }
        }
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

/// The chips above the message box.
#[component]
pub fn AttachmentChips(attachments: Attachments) -> impl IntoView {
    view! {
        <ul class="composer__attachments" aria-label=tr(Key::Attachments) data-testid="attachments"
            hidden=move || attachments.is_empty()>
            <For each=move || attachments.list.get() key=|pending| (pending.key, pending.uploaded.is_some()) let:pending>
                <AttachmentChip pending attachments/>
            </For>
        </ul>
    }
}

#[component]
fn AttachmentChip(pending: Pending, attachments: Attachments) -> impl IntoView {
    let Pending { key, name, size, uploaded } = pending;
    let uploaded_already = uploaded.is_some();
    let thumbnail =
        uploaded.filter(FilePart::is_image).map(|file| view! { <img class="chip__thumb" src=file.url() alt=""/> });
    // The chip is keyed by whether its upload is done, so it is drawn anew, thumbnail and all, once it is.
    let size = match uploaded_already {
        true => byte_size(size),
        false => fill(Key::Uploading, &[("size", &byte_size(size))]),
    };
    let label = fill(Key::RemoveNamed, &[("name", &name)]);
    view! {
        <li class="chip" data-testid="attachment-chip" data-uploading=(!uploaded_already).then_some("true")>
            {thumbnail}
            <span class="chip__name">{name}</span>
            <span class="chip__size">{size}</span>
            <button type="button" class="chip__remove" aria-label=label on:click=move |_| attachments.remove(key)>
                "×"
            </button>
        </li>
    }
}

/// Why a file cannot be attached, in the page's language: the rule of `AttachmentLimits::file_refused`, whose
/// English words are the server's.
fn file_refused(limits: &AttachmentLimits, name: &str, size: u64) -> Option<String> {
    match size {
        0 => Some(fill(Key::FileEmpty, &[("name", name)])),
        size if size > limits.per_file => Some(fill(
            Key::FileTooBig,
            &[("name", name), ("size", &byte_size(size)), ("most", &byte_size(limits.per_file))],
        )),
        _ => None,
    }
}

/// Why a message cannot carry these files, in the page's language (`AttachmentLimits::message_refused`).
fn message_refused(limits: &AttachmentLimits, count: usize, total: u64) -> Option<String> {
    if count > limits.files_per_message as usize {
        let most = limits.files_per_message.to_string();
        return Some(fill(Key::TooManyFiles, &[("most", &most), ("count", &count.to_string())]));
    }
    (total > limits.per_message)
        .then(|| fill(Key::TooMuchTogether, &[("most", &byte_size(limits.per_message)), ("total", &byte_size(total))]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attachments(limits: AttachmentLimits) -> (Attachments, RwSignal<Option<String>>) {
        let note = RwSignal::new(None);
        (Attachments::new(Signal::stored(limits), note), note)
    }

    fn kept(id: &str, name: &str) -> FilePart {
        FilePart { id: id.into(), name: name.into(), media_type: "image/png".into(), size: 10 }
    }

    #[test]
    fn files_over_the_limits_are_refused_by_name_and_the_rest_admitted() {
        let owner = Owner::new();
        owner.set();
        let limits = AttachmentLimits { per_file: 100, per_message: 150, files_per_message: 3 };
        let (attachments, note) = attachments(limits);
        let keys = attachments.admit(&[("a.png".into(), 90), ("big.png".into(), 101), ("b.txt".into(), 70)]);
        assert_eq!(keys, vec![Some(0), None, None]);
        assert_eq!(
            note.get_untracked().as_deref(),
            Some(
                "big.png is 101 B; a file may be at most 100 B · a message's attachments may come to at most 150 B; \
                 these come to 160 B"
            )
        );
        assert_eq!(attachments.admit(&[("empty.txt".into(), 0)]), vec![None]);
        assert_eq!(note.get_untracked().as_deref(), Some("empty.txt is empty"));
        assert!(attachments.is_uploading());
    }

    #[test]
    fn only_kept_files_go_with_the_message_and_a_refused_upload_says_why() {
        let owner = Owner::new();
        owner.set();
        let (attachments, note) = attachments(AttachmentLimits::default());
        let keys = attachments.admit(&[("a.png".into(), 10), ("b.png".into(), 10)]);
        attachments.uploaded(keys[0].unwrap(), Ok(kept("id-a", "a.png")));
        assert_eq!(attachments.refs(), vec![AttachmentRef { id: "id-a".into(), name: "a.png".into() }]);
        assert!(attachments.is_uploading());
        attachments.uploaded(keys[1].unwrap(), Err("b.png is not a PNG image: its bytes are not one".into()));
        assert!(!attachments.is_uploading());
        assert_eq!(note.get_untracked().as_deref(), Some("b.png is not a PNG image: its bytes are not one"));
        assert_eq!(attachments.list.get_untracked().len(), 1);
        // A chip removed while its upload ran stays removed.
        let later = attachments.admit(&[("c.png".into(), 10)])[0].unwrap();
        attachments.remove(later);
        attachments.uploaded(later, Ok(kept("id-c", "c.png")));
        assert_eq!(attachments.refs().len(), 1);
    }
}
