//! "2 files changed, +5 −1" under a finished answer, and its Changes view: the files the run changed and the unified
//! diff of all of them, fetched when first opened and drawn by the Edit rows' diff renderer (in the browser, from the
//! tool renderers' chunk).

use std::sync::Arc;

use leptos::prelude::*;

use super::client_only::{IntoRowView, RowView};
use super::tool::{DiffView, parse_unified};
use crate::i18n::{Key, plural, t, tr};
use crate::protocol::{ChangeStatus, ChangedFile, ChangesResponse, RunChanges};

/// Where the diff of a run's changes is: not asked for yet, on its way, here, or refused.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ChangesLoad {
    #[default]
    NotLoaded,
    Loading,
    Loaded(Arc<ChangesResponse>),
    Failed(String),
}

/// The summary row of an answer whose run changed files, with the button that opens its Changes view.
#[component]
pub fn ChangesRow(
    /// What the run changed, from its `changes` frame.
    changes: RunChanges,
    /// Fetches the diff of the run with this checkpoint key into the signal (the page's request).
    load: Callback<(String, RwSignal<ChangesLoad>)>,
) -> impl IntoView {
    let open = RwSignal::new(false);
    let loaded = RwSignal::new(ChangesLoad::NotLoaded);
    let view_id = format!("changes-{}", changes.checkpoint);
    let toggle = {
        let key = changes.checkpoint.clone();
        move |_| {
            let opening = !open.get_untracked();
            open.set(opening);
            // Fetched once, when first opened; a failed fetch is tried again on the next opening.
            let fetch = matches!(loaded.get_untracked(), ChangesLoad::NotLoaded | ChangesLoad::Failed(_));
            if opening && fetch {
                loaded.set(ChangesLoad::Loading);
                load.run((key.clone(), loaded));
            }
        }
    };
    let (count, additions, deletions) = (changes.files.len() as u64, changes.additions, changes.deletions);
    let summary = move || {
        let files = plural(Key::FilesChangedOne, Key::FilesChangedOther, count);
        format!("{files}, +{additions} −{deletions}")
    };
    view! {
        <div class="changes" data-testid="changes">
            <div class="changes__bar">
                <span class="changes__summary">{summary}</span>
                <button
                    type="button"
                    class="changes__toggle"
                    aria-expanded=move || open.get().to_string()
                    aria-controls=view_id.clone()
                    on:click=toggle
                >
                    {move || if open.get() { t(Key::HideChanges) } else { t(Key::Changes) }}
                </button>
            </div>
            <Show when=move || open.get()>
                // `data-diff="loaded"` once the diff is here, drawn or still waiting for the code that draws it.
                <div
                    class="changes__view"
                    id=view_id.clone()
                    role="region"
                    aria-label=tr(Key::ChangesOfRun)
                    data-diff=move || loaded.with(|l| matches!(l, ChangesLoad::Loaded(_))).then_some("loaded")
                >
                    {move || match loaded.get() {
                        ChangesLoad::NotLoaded | ChangesLoad::Loading => loading_note(),
                        ChangesLoad::Failed(message) => {
                            view! {
                                <p class="changes__note changes__note--failed" role="alert">
                                    {tr(Key::ChangesNotLoaded)}
                                    {message}
                                </p>
                            }
                                .into_row_view()
                        }
                        ChangesLoad::Loaded(response) => lazy_changes_view(response),
                    }}
                </div>
            </Show>
        </div>
    }
}

/// What the Changes view shows while its diff, or the code that draws it, is on its way.
pub(crate) fn loading_note() -> RowView {
    view! { <p class="changes__note">{tr(Key::LoadingChanges)}</p> }.into_row_view()
}

/// The Changes view, from the tool renderers' chunk in the browser; the server and its tests link it in.
fn lazy_changes_view(response: Arc<ChangesResponse>) -> RowView {
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    let view = super::tool::changes_view(response);
    #[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
    let view = changes_view(response);
    view
}

/// The files with their counts, then each file's diff.
pub(crate) fn changes_view(response: Arc<ChangesResponse>) -> RowView {
    let files = response.files.iter().map(|file| view! { <FileLine file=file.clone()/> }).collect_view();
    let sections = file_sections(&response.diff)
        .into_iter()
        .map(|(path, body)| {
            let lines = parse_unified(&body);
            let label = path.clone();
            let file = path.clone();
            view! {
                <section class="changes__file" aria-label=label>
                    <h2 class="changes__path">{path}</h2>
                    <DiffView lines path=file/>
                </section>
            }
        })
        .collect_view();
    let truncated = response.truncated.then(|| {
        view! {
            <p class="changes__note">
                {tr(Key::DiffCut)}
            </p>
        }
    });
    let skipped = (!response.skipped.is_empty()).then(|| {
        let names: Vec<&str> = response.skipped.iter().map(|skipped| skipped.path.as_str()).collect();
        view! { <p class="changes__note">{tr(Key::NotInCheckpoints)}{names.join(t(Key::ListSeparator))}</p> }
    });
    view! {
        <ul class="changes__files">{files}</ul>
        {skipped}
        {sections}
        {truncated}
    }
    .into_row_view()
}

#[component]
fn FileLine(file: ChangedFile) -> impl IntoView {
    let status = file.status.as_str();
    let counts =
        if file.binary { t(Key::Binary).to_owned() } else { format!("+{} −{}", file.additions, file.deletions) };
    let status_label = match file.status {
        ChangeStatus::Added => Key::FileAdded,
        ChangeStatus::Modified => Key::FileModified,
        ChangeStatus::Deleted => Key::FileDeleted,
    };
    view! {
        <li class="changes__entry">
            <span class=format!("changes__status changes__status--{status}")>{tr(status_label)}</span>
            <span class="changes__name">{file.path}</span>
            <span class="changes__counts">{counts}</span>
        </li>
    }
}

/// Splits git's unified diff of several files into (path, that file's diff), dropping the `diff --git` and
/// `index` header lines the section's heading and its `---`/`+++` lines already say.
fn file_sections(diff: &str) -> Vec<(String, String)> {
    let mut sections: Vec<(String, String)> = Vec::new();
    let mut in_header = false;
    for line in diff.lines() {
        if let Some(paths) = line.strip_prefix("diff --git ") {
            sections.push((path_of(paths), String::new()));
            in_header = true;
            continue;
        }
        if line.starts_with("@@") {
            in_header = false;
        }
        if in_header && line.starts_with("index ") {
            continue;
        }
        match sections.last_mut() {
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            // Text before any file header (not git's output): kept, under no name.
            None => sections.push((String::new(), format!("{line}\n"))),
        }
    }
    sections
}

/// The path of `a/<path> b/<path>`: both halves name the same file, since the diff detects no renames.
fn path_of(paths: &str) -> String {
    let half = paths.len().saturating_sub(1) / 2;
    match (paths.get(..half), paths.get(half + 1..)) {
        (Some(old), Some(new)) if old.strip_prefix("a/").is_some() && old.get(2..) == new.get(2..) => {
            old[2..].to_owned()
        }
        _ => paths.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::{file_sections, path_of};

    #[test]
    fn a_diff_of_several_files_is_one_section_per_file_without_git_index_lines() {
        let diff = "diff --git a/edit.txt b/edit.txt\nindex 1111111..2222222 100644\n--- a/edit.txt\n+++ \
                    b/edit.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\ndiff --git a/new file.txt b/new \
                    file.txt\nnew file mode 100644\nindex 0000000..3333333\n--- /dev/null\n+++ b/new file.txt\n@@ \
                    -0,0 +1 @@\n+new\n";
        let sections = file_sections(diff);
        assert_eq!(
            sections,
            [
                (
                    "edit.txt".to_owned(),
                    "--- a/edit.txt\n+++ b/edit.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n".to_owned()
                ),
                (
                    "new file.txt".to_owned(),
                    "new file mode 100644\n--- /dev/null\n+++ b/new file.txt\n@@ -0,0 +1 @@\n+new\n".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn a_header_that_is_not_two_halves_of_one_path_is_shown_as_it_is() {
        assert_eq!(path_of("a/x b/x"), "x");
        assert_eq!(path_of("a/x b/y"), "a/x b/y");
        assert_eq!(path_of("\"a/tab\\tname\" \"b/tab\\tname\""), "\"a/tab\\tname\" \"b/tab\\tname\"");
    }
}
