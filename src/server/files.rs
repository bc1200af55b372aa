//! `GET /api/files`: the paths of a session's workspace that match what follows an `@` in the composer, found by a
//! gitignore-aware walk (the `ignore` crate, as ripgrep walks) and ranked by `crate::fuzzy`.
//!
//! The walk never leaves the workspace: it starts at the canonical root, follows no symlink, and lists a symlink
//! only when what it points to is inside the root. The query is only ever compared with the paths the walk found,
//! never joined to a path, so `..` or an absolute path in it can match nothing outside.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ignore::WalkBuilder;
use tokio::time::Instant;

use super::chat::{Chat, ChatError};
use crate::fuzzy::fuzzy_match;
use crate::protocol::FileMatch;

/// The most paths one answer lists: a screenful of suggestions; typing more narrows it.
pub const MAX_FILES: usize = 50;
/// The most entries one walk looks at: a workspace with a huge untracked tree (no `.gitignore` for it) answers from
/// the first ones instead of making the person wait.
pub const MAX_WALKED: usize = 50_000;
/// The longest query taken; paths are rarely longer, and the fuzzy scorer's cost grows with it.
pub const MAX_QUERY_CHARS: usize = 200;

/// How long a workspace's walk answers the queries after it. Typing `@comp` asks five times within a second or
/// two, and one walk of a tree of 50,000 entries took 0.5–1.5 s; a file made since shows up once this has passed.
pub const WALK_KEPT_FOR: Duration = Duration::from_secs(5);
/// The most workspaces whose walks are kept at once (one per session under way, at most).
const WALKS_KEPT: usize = 16;

/// A matched path's score goes up by this when the whole match lies in its last name (`comp` is more likely
/// `src/composer.rs` than `src/components/x.rs`, other things equal).
const IN_NAME: i32 = 24;

impl Chat {
    /// The paths of `session`'s workspace (or, for a chat not started yet, of the shared `--workspace`, if there
    /// is one) that match `query`, best first, at most [`MAX_FILES`].
    pub async fn mention_files(&self, session: Option<&str>, query: String) -> Result<Vec<FileMatch>, ChatError> {
        let root = match session {
            Some(id) => {
                self.live(id).await?;
                self.workspace_of(id)
            }
            None => match &self.config.workspace {
                Some(shared) => shared.clone(),
                // A new chat's own workspace is made when its first message runs: it has no files yet.
                None => return Ok(Vec::new()),
            },
        };
        let shown = root.display().to_string();
        let failed = |error| ChatError::Workspace { path: shown.clone(), source: std::io::Error::other(error) };
        let paths = match self.file_walks.recent(&root) {
            Some(paths) => paths,
            None => {
                let walked_root = root.clone();
                let paths: Arc<[String]> =
                    tokio::task::spawn_blocking(move || workspace_paths(&walked_root)).await.map_err(failed)?.into();
                self.file_walks.keep(root, paths.clone());
                paths
            }
        };
        tokio::task::spawn_blocking(move || rank(&paths, &query, MAX_FILES)).await.map_err(failed)
    }
}

/// The walks of the last few workspaces asked about, each answering for [`WALK_KEPT_FOR`] after it was made.
#[derive(Debug, Default)]
pub struct WalkCache {
    walks: Mutex<HashMap<PathBuf, Walked>>,
}

#[derive(Debug)]
struct Walked {
    at: Instant,
    paths: Arc<[String]>,
}

impl WalkCache {
    /// The paths of `root`'s walk, if one was made less than [`WALK_KEPT_FOR`] ago.
    pub fn recent(&self, root: &Path) -> Option<Arc<[String]>> {
        let walks = self.walks.lock().expect("the walk cache's lock is never poisoned");
        walks.get(root).filter(|walked| walked.at.elapsed() < WALK_KEPT_FOR).map(|walked| walked.paths.clone())
    }

    /// Keeps a walk of `root` just made, dropping the walks that no longer answer (and, past [`WALKS_KEPT`], the
    /// oldest).
    pub fn keep(&self, root: PathBuf, paths: Arc<[String]>) {
        let mut walks = self.walks.lock().expect("the walk cache's lock is never poisoned");
        walks.retain(|_, walked| walked.at.elapsed() < WALK_KEPT_FOR);
        if walks.len() >= WALKS_KEPT
            && let Some(oldest) = walks.iter().min_by_key(|(_, walked)| walked.at).map(|(root, _)| root.clone())
        {
            walks.remove(&oldest);
        }
        walks.insert(root, Walked { at: Instant::now(), paths });
    }
}

/// What the walk lists under `root`, at most [`MAX_WALKED`] entries; none when the root is missing or unreadable.
fn workspace_paths(root: &Path) -> Vec<String> {
    let Ok(root) = root.canonicalize() else { return Vec::new() };
    walk(&root).take(MAX_WALKED).collect()
}

/// The walked `paths` matching `query`, best first, at most `limit`.
fn rank(paths: &[String], query: &str, limit: usize) -> Vec<FileMatch> {
    let words: Vec<Vec<char>> = query.split_whitespace().map(|word| word.chars().map(fold).collect()).collect();
    let mut found: Vec<Ranked> = Vec::new();
    for path in paths {
        if !words.iter().all(|word| is_subsequence(word, path)) {
            continue;
        }
        let Some(matched) = fuzzy_match(query, path) else { continue };
        let name_start = path.trim_end_matches('/').rfind('/').map_or(0, |slash| path[..slash + 1].chars().count());
        let in_name = matched.positions.first().is_some_and(|&first| first >= name_start);
        let score = matched.score + if in_name { IN_NAME } else { 0 };
        found.push(Ranked { score, path: path.clone(), positions: matched.positions });
    }
    // Best score first; then shallower, shorter and alphabetical, so an empty query lists the top level first.
    found.sort_by(|a, b| {
        let key = |r: &Ranked| (Reverse(r.score), r.path.trim_end_matches('/').matches('/').count(), r.path.len());
        key(a).cmp(&key(b)).then_with(|| a.path.cmp(&b.path))
    });
    found.truncate(limit);
    found.into_iter().map(|ranked| FileMatch { path: ranked.path, positions: ranked.positions }).collect()
}

struct Ranked {
    score: i32,
    path: String,
    positions: Vec<usize>,
}

/// The relative paths under the canonical `root` the walk lists, `/`-separated, directories ending in `/`: what
/// `.gitignore` (also outside a git repository), `.ignore` and git's excludes leave, hidden entries left out, no
/// symlink followed, names that are not UTF-8 skipped.
fn walk(root: &Path) -> impl Iterator<Item = String> + '_ {
    WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .ignore(true)
        .require_git(false)
        .follow_links(false)
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.depth() > 0)
        .filter_map(move |entry| {
            let file_type = entry.file_type()?;
            let is_dir = if file_type.is_symlink() {
                let target = inside(root, entry.path())?;
                target.is_dir()
            } else {
                file_type.is_dir()
            };
            let relative = entry.path().strip_prefix(root).ok()?;
            let mut path = String::new();
            for name in relative.components() {
                if !path.is_empty() {
                    path.push('/');
                }
                path.push_str(name.as_os_str().to_str()?);
            }
            if is_dir {
                path.push('/');
            }
            Some(path)
        })
}

/// Where the symlink at `link` leads, if that exists and is inside `root` (canonical).
fn inside(root: &Path, link: &Path) -> Option<PathBuf> {
    let target = link.canonicalize().ok()?;
    target.starts_with(root).then_some(target)
}

/// The fuzzy scorer's case folding, for the quick test that rules most paths out before it runs.
fn fold(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

/// True when the word's characters all appear in `text` in order (case-insensitively): a path without it cannot
/// match, and checking this is much cheaper than scoring.
fn is_subsequence(word: &[char], text: &str) -> bool {
    let mut wanted = word.iter().peekable();
    for c in text.chars() {
        match wanted.peek() {
            Some(&&next) if fold(c) == next => {
                wanted.next();
            }
            Some(_) => {}
            None => return true,
        }
    }
    wanted.peek().is_none()
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;
    use std::path::{Path, PathBuf};
    use std::time::Instant;

    use std::time::Duration;

    use super::{MAX_FILES, WALK_KEPT_FOR, WALKS_KEPT, WalkCache, is_subsequence, rank, workspace_paths};
    use crate::protocol::FileMatch;

    /// The workspace paths under `root` matching `query`, best first, at most `limit`, as the route finds them
    /// with no walk kept.
    fn matching_paths(root: &Path, query: &str, limit: usize) -> Vec<FileMatch> {
        rank(&workspace_paths(root), query, limit)
    }

    fn paths(root: &Path, query: &str) -> Vec<String> {
        matching_paths(root, query, MAX_FILES).into_iter().map(|found| found.path).collect()
    }

    fn touch(root: &Path, path: &str) {
        let path = root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, "x").unwrap();
    }

    #[test]
    fn gitignored_and_hidden_entries_are_left_out_also_outside_a_git_repository() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        touch(root, "src/main.rs");
        touch(root, "target/debug/main.d");
        touch(root, "notes/todo.md");
        touch(root, "notes/secret.key");
        touch(root, ".env");
        touch(root, ".git/config");
        fs::write(root.join(".gitignore"), "target/\n*.key\n").unwrap();
        let all = paths(root, "");
        assert_eq!(all, vec!["src/", "notes/", "src/main.rs", "notes/todo.md"]);
        assert!(paths(root, "main").iter().all(|path| !path.starts_with("target")));
    }

    #[test]
    fn the_best_match_comes_first_and_a_match_in_the_file_name_beats_one_in_the_directories() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        touch(root, "src/components/palette/dialog.rs");
        touch(root, "src/components/composer.rs");
        touch(root, "docs/decisions.md");
        touch(root, "composer/readme.md");
        let found = paths(root, "composer");
        let at = |path: &str| found.iter().position(|found| found == path).unwrap_or(usize::MAX);
        assert!(at("src/components/composer.rs") < at("composer/readme.md"), "{found:?}");
        assert_eq!(at("composer/"), 0, "the exact name first: {found:?}");
        assert!(!found.contains(&"docs/decisions.md".to_owned()));
        let dialog = paths(root, "dlg");
        assert_eq!(dialog.first().map(String::as_str), Some("src/components/palette/dialog.rs"));
        let positions = &matching_paths(root, "dec", MAX_FILES)[0].positions;
        assert_eq!(positions, &vec![5, 6, 7], "the matched characters of docs/decisions.md, for highlighting");
    }

    #[test]
    fn the_list_is_capped() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..(MAX_FILES + 30) {
            touch(dir.path(), &format!("file{i:03}.txt"));
        }
        assert_eq!(paths(dir.path(), "file").len(), MAX_FILES);
        assert_eq!(matching_paths(dir.path(), "file", 3).len(), 3);
    }

    #[test]
    fn nothing_outside_the_workspace_is_listed_through_a_symlink_or_a_query() {
        let outside = tempfile::tempdir().unwrap();
        touch(outside.path(), "passwd");
        touch(outside.path(), "keys/id_rsa");
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        touch(&root, "inside.txt");
        touch(&root, "sub/deep.txt");
        symlink(outside.path().join("passwd"), root.join("escape")).unwrap();
        symlink(outside.path().join("keys"), root.join("keys")).unwrap();
        symlink(root.join("inside.txt"), root.join("alias.txt")).unwrap();
        symlink(root.join("nowhere"), root.join("dangling")).unwrap();
        let all = paths(&root, "");
        assert_eq!(all, vec!["sub/", "alias.txt", "inside.txt", "sub/deep.txt"], "only what lies inside");
        for hostile in ["../", "..", "/etc/passwd", "../../..", "passwd", "id_rsa", "keys", "\0", "%2e%2e/"] {
            let found = paths(&root, hostile);
            assert!(
                found.iter().all(|path| !path.contains("..") && !path.starts_with('/') && all.contains(path)),
                "{hostile:?} found {found:?}"
            );
        }
        assert_eq!(paths(&root, "id_rsa"), Vec::<String>::new());
        // A symlinked workspace root is walked as the directory it is.
        let linked = dir.path().join("linked-ws");
        symlink(&root, &linked).unwrap();
        assert_eq!(paths(&linked, ""), all);
    }

    #[tokio::test(start_paused = true)]
    async fn a_walk_answers_for_a_few_seconds_then_the_workspace_is_walked_again() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let cache = WalkCache::default();
        assert!(cache.recent(&root).is_none());
        cache.keep(root.clone(), vec!["a.txt".to_owned()].into());
        tokio::time::advance(WALK_KEPT_FOR - Duration::from_millis(1)).await;
        assert_eq!(cache.recent(&root).as_deref(), Some(&["a.txt".to_owned()][..]));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(cache.recent(&root).is_none(), "a file made since shows up once the walk is this old");
        for i in 0..(WALKS_KEPT + 3) {
            cache.keep(root.join(i.to_string()), Vec::new().into());
            tokio::time::advance(Duration::from_millis(10)).await;
        }
        assert_eq!(cache.walks.lock().unwrap().len(), WALKS_KEPT, "only the latest walks are kept");
        assert!(cache.recent(&root.join("0")).is_none(), "the oldest went first");
        assert!(cache.recent(&root.join((WALKS_KEPT + 2).to_string())).is_some());
    }

    #[test]
    fn a_missing_workspace_has_no_files() {
        let dir = tempfile::tempdir().unwrap();
        assert!(paths(&dir.path().join("not-made-yet"), "").is_empty());
    }

    #[test]
    fn the_quick_test_agrees_with_order_and_case() {
        let word = |w: &str| w.chars().collect::<Vec<_>>();
        assert!(is_subsequence(&word("cmp"), "src/Composer.rs"));
        assert!(!is_subsequence(&word("pmc"), "src/composer.rs"));
        assert!(is_subsequence(&word(""), ""));
        assert!(!is_subsequence(&word("a"), ""));
    }

    /// The walk and ranking over this repository (its `target/` is gitignored), or over `WALK_ROOT` when set; run
    /// with `--ignored --nocapture` to see the figures recorded in docs/decisions.md.
    #[test]
    #[ignore]
    fn time_a_walk_of_this_repository() {
        let root = std::env::var_os("WALK_ROOT").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), PathBuf::from);
        let root = root.as_path();
        for query in ["", "comp", "src/components/palette/dialog.rs"] {
            let started = Instant::now();
            let found = matching_paths(root, query, MAX_FILES);
            println!("{query:?}: {} shown in {:?}", found.len(), started.elapsed());
        }
    }
}
