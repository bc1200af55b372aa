//! Taking files into the draft: each is checked against the server's limits, admitted as a chip on its way up and
//! uploaded, or refused with the reason in the composer's note; then the server's answer to each upload.

use leptos::prelude::*;

use super::{Attachments, Pending, Picked, Upload};
use crate::i18n::{Key, LiveText, fill};
use crate::protocol::{AttachmentLimits, FilePart, byte_size};

/// Admits the picked files and uploads those admitted.
pub(super) fn take(attachments: Attachments, files: Vec<Picked>, upload: Upload) {
    let described: Vec<(String, u64)> = files.iter().map(|(_, name, size)| (name.clone(), *size)).collect();
    let keys = attachments.admit(&described);
    for ((file, _, _), key) in files.into_iter().zip(keys) {
        if let Some(key) = key {
            upload.run((file, Callback::new(move |outcome| attachments.uploaded(key, outcome))));
        }
    }
}

impl Attachments {
    /// Admits the files (name and size) the limits allow, each as a chip on its way up, and says in the note why the
    /// others were refused; the key of each admitted file, `None` for a refused one.
    pub fn admit(&self, picked: &[(String, u64)]) -> Vec<Option<u64>> {
        let limits = self.limits.get_untracked();
        // Each refused file with the count and the total it would have made: the note says why in the page's
        // language whenever it is drawn.
        let mut refused = Vec::new();
        let keys = picked
            .iter()
            .map(|(name, size)| {
                let (count, total) =
                    self.list.with_untracked(|list| (list.len(), list.iter().map(|pending| pending.size).sum::<u64>()));
                let with = (name.clone(), *size, count + 1, total + size);
                if refusal(&limits, &with).is_some() {
                    refused.push(with);
                    return None;
                }
                let key = self.next_key.get_value();
                self.next_key.set_value(key + 1);
                self.list.update(|list| list.push(Pending { key, name: name.clone(), size: *size, uploaded: None }));
                Some(key)
            })
            .collect();
        if !refused.is_empty() {
            self.note.set(Some(LiveText::new(move || {
                refused.iter().filter_map(|with| refusal(&limits, with)).collect::<Vec<_>>().join(" · ")
            })));
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
                self.note.set(Some(LiveText::fixed(why)));
            }
        }
    }
}

/// Why a file (name, size) cannot be attached or join the others (making this count and total), if it cannot.
fn refusal(limits: &AttachmentLimits, (name, size, count, total): &(String, u64, usize, u64)) -> Option<String> {
    file_refused(limits, name, *size).or_else(|| message_refused(limits, *count, *total))
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
    use crate::protocol::AttachmentRef;

    fn attachments(limits: AttachmentLimits) -> (Attachments, RwSignal<Option<LiveText>>) {
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
            note.get_untracked().map(|note| note.text()).as_deref(),
            Some(
                "big.png is 101 B; a file may be at most 100 B · a message's attachments may come to at most 150 B; \
                 these come to 160 B"
            )
        );
        assert_eq!(attachments.admit(&[("empty.txt".into(), 0)]), vec![None]);
        assert_eq!(note.get_untracked().map(|note| note.text()).as_deref(), Some("empty.txt is empty"));
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
        assert_eq!(
            note.get_untracked().map(|note| note.text()).as_deref(),
            Some("b.png is not a PNG image: its bytes are not one")
        );
        assert_eq!(attachments.list.get_untracked().len(), 1);
        // A chip removed while its upload ran stays removed.
        let later = attachments.admit(&[("c.png".into(), 10)])[0].unwrap();
        attachments.remove(later);
        attachments.uploaded(later, Ok(kept("id-c", "c.png")));
        assert_eq!(attachments.refs().len(), 1);
    }
}
