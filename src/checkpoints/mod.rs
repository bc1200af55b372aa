//! Checkpoints of a workspace's files: a shadow history in a bare git repository of our own (under the data dir),
//! recorded before and after runs so that what a run changed can be shown and undone, whichever tool changed it.
//!
//! The `git` CLI does the work, with a private index inside the shadow repository: its stat cache is what makes
//! recording an unchanged workspace cheap. The workspace's own `.git` is never read or written, and git never adds a
//! `.git` directory to a tree. What is left out of a checkpoint (`.gitignore`d paths, files over the size cap, git
//! repositories inside the workspace) is left alone by a restore, too.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;
use tokio::sync::Mutex;

#[cfg(test)]
mod tests;

/// Checkpoints live in their own namespace so that they never look like branches or tags to a person who opens the
/// shadow repository.
const REF_PREFIX: &str = "refs/chatwire/";

/// The private index, next to the repository it indexes; the workspace's own `.git/index` is never used.
const INDEX_FILE: &str = "chatwire-index";

/// Written last when the shadow repository is created: its presence says the repository is complete.
const ATTRIBUTES_FILE: &str = "info/attributes";

/// `info/attributes` outranks every `.gitattributes` in the work tree. Without it a workspace's `text`, `eol` or
/// `filter` attributes would make git convert files as it records or restores them, and a restore would not give
/// back the bytes that were there.
const ATTRIBUTES: &str = "* -text -filter -ident -working-tree-encoding\n";

/// Settings passed on every command line, so that neither the user's configuration nor git's defaults of the day
/// change what is recorded or how output is parsed.
const SETTINGS: [&str; 15] = [
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.quotepath=off",
    "core.fileMode=true",
    "core.symlinks=true",
    "core.fsmonitor=false",
    // Only the workspace's own ignore files count: a user's global ignore file would make checkpoints differ from
    // one account to another.
    "core.excludesFile=/dev/null",
    "core.attributesFile=/dev/null",
    "core.hooksPath=/dev/null",
    "user.name=chatwire",
    "user.email=chatwire@localhost",
    "commit.gpgsign=false",
    "init.defaultBranch=main",
    // A packing gc runs inside the call that triggered it, not in a process left behind.
    "gc.autoDetach=false",
    "maintenance.autoDetach=false",
];

const MAX_NAME_BYTES: usize = 200;

/// The checkpoints of one work tree. Calls are serialized inside; share one value (in an `Arc`) per work tree, as
/// two values on the same shadow repository would contend for its index lock and fail instead of waiting.
#[derive(Debug)]
pub struct Checkpoints {
    shadow_dir: PathBuf,
    work_tree: PathBuf,
    max_file_bytes: u64,
    serial: Mutex<()>,
}

/// A path a checkpoint left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub path: String,
    pub reason: SkipReason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SkipReason {
    /// A file larger than the cap: recording it would copy it into the shadow repository.
    TooLarge { bytes: u64 },
    /// A directory that is a git repository of its own (a clone inside the workspace): git would record only a link
    /// to its commit, not its files.
    Repository,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recorded {
    pub commit: String,
    pub skipped: Vec<Skipped>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    Added,
    Modified,
    Deleted,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    pub path: String,
    pub status: FileStatus,
    pub additions: u32,
    pub deletions: u32,
    /// Git saw binary content: no line counts, and the diff says only that the file differs.
    pub binary: bool,
}

/// What changed between two checkpoints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changes {
    pub files: Vec<FileChange>,
    pub additions: u32,
    pub deletions: u32,
    /// The unified diff, in git's format (`diff --git a/… b/…` headers).
    pub diff: String,
    /// What either checkpoint left out (the later one's entry where both did). These paths are not in `files`: a
    /// file that grew past the cap was not deleted.
    pub skipped: Vec<Skipped>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restored {
    /// Files changed since the checkpoint, written back.
    pub changed: Vec<String>,
    /// Files created since the checkpoint, removed.
    pub removed: Vec<String>,
    /// Files deleted since the checkpoint, brought back.
    pub recreated: Vec<String>,
    /// The checkpoint recorded just before restoring: restoring it undoes this restore.
    pub backup: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("the checkpoint name {name:?} is refused: {reason}")]
    InvalidName { name: String, reason: &'static str },
    #[error("there is no checkpoint named {name:?}")]
    Unknown { name: String },
    #[error("file checkpoints need git, and no `git` program was found on the PATH")]
    GitMissing,
    #[error("the workspace {} is not a directory", path.display())]
    NoWorkTree { path: PathBuf },
    #[error("git {command} failed ({status}): {stderr}")]
    Git { command: String, status: ExitStatus, stderr: String },
    #[error("git {command} answered something that could not be read: {detail}")]
    UnexpectedOutput { command: &'static str, detail: String },
    #[error("{action} {}: {source}", path.display())]
    Io { action: &'static str, path: PathBuf, source: io::Error },
}

/// The last line of a checkpoint's commit message, for the calls that read the checkpoint later: what it left out
/// was not deleted.
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    skipped: Vec<Skipped>,
}

/// One path that differs between two trees; the path is git's bytes, which need not be UTF-8.
#[derive(Debug)]
struct TreeChange {
    path: Vec<u8>,
    status: FileStatus,
}

/// `git diff --raw` and, where asked for, `--numstat`, by path.
#[derive(Debug, Default)]
struct TreeDiff {
    changes: Vec<TreeChange>,
    counts: HashMap<Vec<u8>, LineCounts>,
}

#[derive(Debug, Clone, Copy)]
struct LineCounts {
    additions: u32,
    deletions: u32,
    binary: bool,
}

struct GitOutput {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl Checkpoints {
    /// Nothing is touched until the first call; the shadow repository is created by the first `record`. Files over
    /// `max_file_bytes` are left out of checkpoints.
    pub fn new(shadow_dir: PathBuf, work_tree: PathBuf, max_file_bytes: u64) -> Checkpoints {
        // git runs in the work tree, so a relative shadow path would be taken from there.
        let shadow_dir = std::path::absolute(&shadow_dir).unwrap_or(shadow_dir);
        let work_tree = std::path::absolute(&work_tree).unwrap_or(work_tree);
        Checkpoints { shadow_dir, work_tree, max_file_bytes, serial: Mutex::new(()) }
    }

    /// Records the work tree as it is now as checkpoint `name`, replacing a checkpoint of that name.
    pub async fn record(&self, name: &str) -> Result<Recorded, CheckpointError> {
        validate_name(name)?;
        let _serial = self.serial.lock().await;
        self.record_serialized(name).await
    }

    /// What changed from checkpoint `from` to checkpoint `to`.
    pub async fn changes(&self, from: &str, to: &str) -> Result<Changes, CheckpointError> {
        let _serial = self.serial.lock().await;
        let from_commit = self.resolve(from).await?;
        let to_commit = self.resolve(to).await?;
        // A path left out of either side has no content there to compare with: a file that grew past the cap was
        // not deleted, one that shrank under it was not created.
        let mut skipped = self.manifest(&to_commit).await?.skipped;
        for earlier in self.manifest(&from_commit).await?.skipped {
            if !skipped.iter().any(|later| later.path == earlier.path) {
                skipped.push(earlier);
            }
        }

        let mut stats_args: Vec<OsString> =
            ["diff", "--raw", "--numstat", "-z", "--no-renames", "--no-ext-diff"].map(OsString::from).into();
        stats_args.extend([OsString::from(&from_commit), OsString::from(&to_commit)]);
        stats_args.extend(left_out_pathspecs(&skipped));
        let stats = self.git(&stats_args, None).await?;
        let TreeDiff { changes: tree_changes, counts } = parse_diff(&stats)
            .map_err(|detail| CheckpointError::UnexpectedOutput { command: "diff --raw --numstat", detail })?;

        let mut diff_args: Vec<OsString> =
            ["diff", "--no-color", "--no-ext-diff", "--no-renames", "--src-prefix=a/", "--dst-prefix=b/"]
                .map(OsString::from)
                .into();
        diff_args.extend([OsString::from(&from_commit), OsString::from(&to_commit)]);
        diff_args.extend(left_out_pathspecs(&skipped));
        let diff = String::from_utf8_lossy(&self.git(&diff_args, None).await?).into_owned();

        let mut changes = Changes { files: Vec::new(), additions: 0, deletions: 0, diff, skipped };
        for TreeChange { path, status } in tree_changes {
            // A mode-only change has a numstat line of zeros; a missing line is read the same way.
            let lines = counts.get(&path).copied().unwrap_or(LineCounts { additions: 0, deletions: 0, binary: false });
            changes.additions = changes.additions.saturating_add(lines.additions);
            changes.deletions = changes.deletions.saturating_add(lines.deletions);
            changes.files.push(FileChange {
                path: display(&path),
                status,
                additions: lines.additions,
                deletions: lines.deletions,
                binary: lines.binary,
            });
        }
        Ok(changes)
    }

    /// Puts the work tree back as it was at checkpoint `name`: files changed since are written back, files created
    /// since are removed, files deleted since come back. Nothing else is written, and paths the checkpoints leave out
    /// are never removed or overwritten.
    pub async fn restore(&self, name: &str) -> Result<Restored, CheckpointError> {
        self.restore_where(name, None).await
    }

    /// Like [`Checkpoints::restore`], for the paths in `touched` only (as `Changes` names them): what the runs since
    /// the checkpoint changed, so that a file changed by someone else meanwhile is left as it is.
    pub async fn restore_touched(&self, name: &str, touched: &BTreeSet<String>) -> Result<Restored, CheckpointError> {
        self.restore_where(name, Some(touched)).await
    }

    async fn restore_where(&self, name: &str, touched: Option<&BTreeSet<String>>) -> Result<Restored, CheckpointError> {
        let _serial = self.serial.lock().await;
        let target = self.resolve(name).await?;
        let left_out_at_target = self.manifest(&target).await?.skipped;
        let backup = self.unused_backup_name().await?;
        let now = self.record_serialized(&backup).await?;

        let args = ["diff", "--raw", "-z", "--no-renames", target.as_str(), now.commit.as_str()];
        let tree_changes = parse_diff(&self.git(args, None).await?)
            .map_err(|detail| CheckpointError::UnexpectedOutput { command: "diff --raw", detail })?
            .changes;
        let mut created = Vec::new();
        let mut changed = Vec::new();
        let mut deleted = Vec::new();
        for TreeChange { path, status } in tree_changes {
            if touched.is_some_and(|touched| !touched.contains(&display(&path))) {
                continue;
            }
            match status {
                FileStatus::Added => created.push(path),
                FileStatus::Modified => changed.push(path),
                FileStatus::Deleted => deleted.push(path),
            }
        }

        // The checkpoint's ignore rules come back first: whether a file missing from the checkpoint was merely
        // ignored then (a `.env`, a `node_modules/` whose rule the run dropped) is asked under them. A changed file
        // is a file both in the checkpoint and on disk, so writing it back cannot collide with anything.
        let mut recreated = Vec::new();
        let mut still_deleted = Vec::new();
        for path in deleted {
            if is_ignore_file(&path) && self.is_missing(&path).await? {
                recreated.push(path);
            } else {
                still_deleted.push(path);
            }
        }
        self.write_back(&target, changed.iter().chain(&recreated)).await?;

        // Not recorded at the checkpoint is not the same as not there: it may have been ignored, over the cap or
        // inside a nested repository then, and it is not ours to remove.
        created.retain(|path| !is_covered(path, &left_out_at_target));
        let ignored = self.ignored(&created).await?;
        created.retain(|path| !ignored.contains(path.as_slice()));
        // Removals before recreations: a file created since may stand where a directory has to come back.
        for path in &created {
            self.remove_created(path).await?;
        }

        // A path the current state lacks but that is still on disk was left out of it rather than deleted (over the
        // cap, ignored, inside a nested repository): such a file is not overwritten.
        let mut recreated_now = Vec::new();
        for path in still_deleted {
            if self.is_missing(&path).await? {
                recreated_now.push(path);
            }
        }
        self.write_back(&target, &recreated_now).await?;
        recreated.extend(recreated_now);

        Ok(Restored {
            changed: changed.iter().map(|path| display(path)).collect(),
            removed: created.iter().map(|path| display(path)).collect(),
            recreated: recreated.iter().map(|path| display(path)).collect(),
            backup,
        })
    }

    /// Whether checkpoint `name` has been recorded; an invalid name never has.
    pub async fn exists(&self, name: &str) -> bool {
        let _serial = self.serial.lock().await;
        self.resolve(name).await.is_ok()
    }

    async fn record_serialized(&self, name: &str) -> Result<Recorded, CheckpointError> {
        self.ensure_repository().await?;

        // Only paths whose stat data differ from the private index can have changed since the last record: these
        // are the ones to size up. An unchanged workspace lists nothing and costs a few `lstat`s per file in git.
        let candidates = self.git(["ls-files", "-z", "--others", "--modified", "--exclude-standard"], None).await?;
        // An ignore rule added after a file was recorded does not untrack it by itself.
        let ignored_but_indexed =
            self.git(["ls-files", "-z", "--cached", "--ignored", "--exclude-standard"], None).await?;

        let mut skipped = Vec::new();
        let mut left_out: Vec<&[u8]> = Vec::new();
        for path in nul_separated(&candidates) {
            // `ls-files --others` names a directory holding a `.git` of its own with a trailing slash, and does not
            // look inside.
            if let Some(repository) = path.strip_suffix(b"/") {
                skipped.push(Skipped { path: display(repository), reason: SkipReason::Repository });
                left_out.push(repository);
                continue;
            }
            let full_path = self.work_tree.join(OsStr::from_bytes(path));
            match tokio::fs::symlink_metadata(&full_path).await {
                Ok(metadata) if metadata.is_file() && metadata.len() > self.max_file_bytes => {
                    skipped
                        .push(Skipped { path: display(path), reason: SkipReason::TooLarge { bytes: metadata.len() } });
                    left_out.push(path);
                }
                Ok(_) => {}
                // Deleted since the last record: `add -A` takes it out of the index.
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(source) => return Err(CheckpointError::Io { action: "looking at", path: full_path, source }),
            }
        }

        let mut unindexed = ignored_but_indexed;
        for path in &left_out {
            unindexed.extend_from_slice(path);
            unindexed.push(0);
        }
        if !unindexed.is_empty() {
            // A file recorded while small and now over the cap must leave the index too, or its old content would
            // be recorded again as if it were current.
            let args = [
                "--literal-pathspecs",
                "rm",
                "-r",
                "-q",
                "--cached",
                "--force",
                "--ignore-unmatch",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
            ];
            self.git(args, Some(unindexed)).await?;
        }

        if !candidates.is_empty() {
            let mut pathspecs = b".\0".to_vec();
            for path in &left_out {
                pathspecs.extend_from_slice(b":(exclude,literal)");
                pathspecs.extend_from_slice(path);
                pathspecs.push(0);
            }
            self.git(["add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"], Some(pathspecs)).await?;
        }

        let tree = trimmed(self.git(["write-tree"], None).await?, "write-tree")?;
        let manifest = Manifest { skipped };
        let manifest_line = serde_json::to_string(&manifest).expect("a manifest of strings and numbers serializes");
        let message = format!("checkpoint {name}\n\n{manifest_line}\n").into_bytes();
        let commit = trimmed(self.git(["commit-tree", tree.as_str()], Some(message)).await?, "commit-tree")?;
        let reference = format!("{REF_PREFIX}{name}");
        self.git(["update-ref", reference.as_str(), commit.as_str()], None).await?;
        // Loose objects pile up only where files were added; a record that found nothing new spares the check.
        if !candidates.is_empty() {
            self.git(["gc", "--auto", "--quiet"], None).await?;
        }

        Ok(Recorded { commit, skipped: manifest.skipped })
    }

    async fn ensure_repository(&self) -> Result<(), CheckpointError> {
        if !tokio::fs::metadata(&self.work_tree).await.is_ok_and(|metadata| metadata.is_dir()) {
            return Err(CheckpointError::NoWorkTree { path: self.work_tree.clone() });
        }
        if self.is_ready().await {
            return Ok(());
        }
        tokio::fs::create_dir_all(&self.shadow_dir).await.map_err(|source| CheckpointError::Io {
            action: "creating the checkpoint repository",
            path: self.shadow_dir.clone(),
            source,
        })?;
        // An empty template leaves out sample hooks and git's own `info/exclude`. Reinitializing a repository that
        // a crash left without its attributes is harmless.
        let mut init = self.isolated_command();
        init.args(["init", "--bare", "--quiet", "--template="]).arg(&self.shadow_dir);
        succeeded(self.output(init, None).await?, "init")?;

        let attributes = self.shadow_dir.join(ATTRIBUTES_FILE);
        let info_dir = self.shadow_dir.join("info");
        let written = async {
            tokio::fs::create_dir_all(&info_dir).await?;
            tokio::fs::write(&attributes, ATTRIBUTES).await
        };
        written.await.map_err(|source| CheckpointError::Io { action: "writing", path: attributes, source })
    }

    async fn is_ready(&self) -> bool {
        tokio::fs::try_exists(self.shadow_dir.join(ATTRIBUTES_FILE)).await.unwrap_or(false)
    }

    /// The commit of checkpoint `name`.
    async fn resolve(&self, name: &str) -> Result<String, CheckpointError> {
        validate_name(name)?;
        let unknown = || CheckpointError::Unknown { name: name.to_owned() };
        if !self.is_ready().await {
            return Err(unknown());
        }
        let reference = format!("{REF_PREFIX}{name}^{{commit}}");
        let output = self.git_output(["rev-parse", "--verify", "--quiet", reference.as_str()], None).await?;
        if output.status.success() {
            trimmed(output.stdout, "rev-parse")
        } else if output.status.code() == Some(1) {
            Err(unknown())
        } else {
            Err(git_failed("rev-parse", &output))
        }
    }

    async fn manifest(&self, commit: &str) -> Result<Manifest, CheckpointError> {
        let object = self.git(["cat-file", "commit", commit], None).await?;
        let unreadable = |detail: String| CheckpointError::UnexpectedOutput { command: "cat-file commit", detail };
        let message_start = memchr::memmem::find(&object, b"\n\n")
            .ok_or_else(|| unreadable(format!("commit {commit} has no message")))?;
        let message = object[message_start..].trim_ascii_end();
        let manifest_line = message.rsplit(|byte| *byte == b'\n').next().unwrap_or_default();
        serde_json::from_slice(manifest_line)
            .map_err(|error| unreadable(format!("commit {commit} is not a checkpoint: {error}")))
    }

    async fn unused_backup_name(&self) -> Result<String, CheckpointError> {
        let millis = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_millis());
        let base = format!("restore-backup/{millis}");
        let mut name = base.clone();
        let mut attempt = 1;
        loop {
            match self.resolve(&name).await {
                Err(CheckpointError::Unknown { .. }) => return Ok(name),
                Err(error) => return Err(error),
                Ok(_) => {
                    attempt += 1;
                    name = format!("{base}-{attempt}");
                }
            }
        }
    }

    /// Writes files back from checkpoint `commit`, with their modes; the private index is left as it is.
    async fn write_back<'a>(
        &self,
        commit: &str,
        paths: impl IntoIterator<Item = &'a Vec<u8>>,
    ) -> Result<(), CheckpointError> {
        let mut list = Vec::new();
        for path in paths {
            list.extend_from_slice(path);
            list.push(0);
        }
        if list.is_empty() {
            return Ok(());
        }
        let args = [
            "--literal-pathspecs",
            "restore",
            "--source",
            commit,
            "--worktree",
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
        ];
        self.git(args, Some(list)).await.map(drop)
    }

    /// Which of `paths` the work tree's ignore rules cover as they stand, whatever the private index holds.
    async fn ignored(&self, paths: &[Vec<u8>]) -> Result<HashSet<Vec<u8>>, CheckpointError> {
        if paths.is_empty() {
            return Ok(Default::default());
        }
        let list = paths.iter().flat_map(|path| path.iter().copied().chain([0])).collect();
        let output = self.git_output(["check-ignore", "--no-index", "-z", "--stdin"], Some(list)).await?;
        // Exit status 1: none of them is ignored.
        match output.status.code() {
            Some(0) => Ok(nul_separated(&output.stdout).map(<[u8]>::to_vec).collect()),
            Some(1) => Ok(Default::default()),
            _ => Err(git_failed("check-ignore", &output)),
        }
    }

    /// Whether nothing is at `path`. A file standing where one of its parent directories should be counts as
    /// something there: nothing is written through it.
    async fn is_missing(&self, path: &[u8]) -> Result<bool, CheckpointError> {
        let full_path = self.work_tree.join(OsStr::from_bytes(path));
        match tokio::fs::symlink_metadata(&full_path).await {
            Ok(_) => Ok(false),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(true),
            Err(error) if error.kind() == io::ErrorKind::NotADirectory => Ok(false),
            Err(source) => Err(CheckpointError::Io { action: "looking at", path: full_path, source }),
        }
    }

    /// Removes a file created since the checkpoint, then the directories that removing it left empty.
    async fn remove_created(&self, path: &[u8]) -> Result<(), CheckpointError> {
        let relative = Path::new(OsStr::from_bytes(path));
        let full_path = self.work_tree.join(relative);
        match tokio::fs::remove_file(&full_path).await {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(CheckpointError::Io { action: "removing", path: full_path, source }),
        }
        // git records no directories, so a directory that was already empty at the checkpoint goes too; one that
        // still holds anything (an ignored file, say) fails to be removed and stays.
        for directory in relative.ancestors().skip(1).take_while(|ancestor| !ancestor.as_os_str().is_empty()) {
            if tokio::fs::remove_dir(self.work_tree.join(directory)).await.is_err() {
                break;
            }
        }
        Ok(())
    }

    /// A git command with every inherited `GIT_*` variable removed (they could point it at another repository,
    /// index or configuration) and no configuration but ours.
    fn isolated_command(&self) -> Command {
        let mut command = Command::new("git");
        for (key, _) in std::env::vars_os() {
            if key.as_bytes().starts_with(b"GIT_") {
                command.env_remove(&key);
            }
        }
        command
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .current_dir(&self.work_tree)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for setting in SETTINGS {
            command.arg("-c").arg(setting);
        }
        command
    }

    /// Runs git on the shadow repository and returns its standard output, or an error carrying its stderr.
    async fn git<I, S>(&self, args: I, input: Option<Vec<u8>>) -> Result<Vec<u8>, CheckpointError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<OsString> = args.into_iter().map(|arg| arg.as_ref().to_owned()).collect();
        let output = self.git_output(&args, input).await?;
        succeeded(output, &subcommand_of(&args))
    }

    /// Runs git on the shadow repository, whatever its exit status.
    async fn git_output<I, S>(&self, args: I, input: Option<Vec<u8>>) -> Result<GitOutput, CheckpointError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = self.isolated_command();
        command
            .env("GIT_DIR", &self.shadow_dir)
            .env("GIT_WORK_TREE", &self.work_tree)
            .env("GIT_INDEX_FILE", self.shadow_dir.join(INDEX_FILE))
            .args(args);
        self.output(command, input).await
    }

    async fn output(&self, mut command: Command, input: Option<Vec<u8>>) -> Result<GitOutput, CheckpointError> {
        command.stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() });
        let mut child = command.spawn().map_err(|source| self.spawn_error(source))?;
        let stdin = child.stdin.take();
        let feed = async move {
            if let (Some(mut stdin), Some(input)) = (stdin, input) {
                stdin.write_all(&input).await?;
            }
            Ok::<(), io::Error>(())
        };
        // Fed while the output is read: a long path list must not block on a pipe while git's output fills another.
        let (fed, output) = tokio::join!(feed, child.wait_with_output());
        let io_error = |action, source| CheckpointError::Io { action, path: self.work_tree.clone(), source };
        let output = output.map_err(|source| io_error("waiting for git in", source))?;
        // When git failed, its stderr says more than the broken pipe it left behind.
        if output.status.success()
            && let Err(source) = fed
        {
            return Err(io_error("feeding git in", source));
        }
        Ok(GitOutput { status: output.status, stdout: output.stdout, stderr: output.stderr })
    }

    fn spawn_error(&self, source: io::Error) -> CheckpointError {
        // A missing working directory and a missing program are the same error to `spawn`.
        if source.kind() == io::ErrorKind::NotFound {
            if self.work_tree.is_dir() {
                CheckpointError::GitMissing
            } else {
                CheckpointError::NoWorkTree { path: self.work_tree.clone() }
            }
        } else {
            CheckpointError::Io { action: "running git in", path: self.work_tree.clone(), source }
        }
    }
}

/// Refuses anything but plain ref components, so that a name can neither leave `refs/chatwire/` nor be read by git
/// as a revision expression (`@{…}`, `^`, `~`, `:`).
fn validate_name(name: &str) -> Result<(), CheckpointError> {
    let refuse = |reason| Err(CheckpointError::InvalidName { name: name.to_owned(), reason });
    if name.is_empty() {
        return refuse("it is empty");
    }
    if name.len() > MAX_NAME_BYTES {
        return refuse("it is longer than 200 bytes");
    }
    if name.contains("..") {
        return refuse("it contains `..`");
    }
    for component in name.split('/') {
        if component.is_empty() {
            return refuse("it has an empty component (a leading, trailing or doubled `/`)");
        }
        if !component.bytes().all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.')) {
            return refuse("only ASCII letters, digits, `-`, `_`, `.` and `/` are allowed");
        }
        if component.starts_with('.') || component.ends_with('.') {
            return refuse("a component starts or ends with `.`");
        }
        if component.ends_with(".lock") {
            return refuse("a component ends with `.lock`");
        }
    }
    Ok(())
}

/// `-- . :(exclude,literal)<path>…`: the whole tree but what was left out.
fn left_out_pathspecs(skipped: &[Skipped]) -> Vec<OsString> {
    let mut pathspecs = vec![OsString::from("--"), OsString::from(".")];
    pathspecs.extend(skipped.iter().map(|skipped| OsString::from(format!(":(exclude,literal){}", skipped.path))));
    pathspecs
}

/// Reads `git diff --raw -z`, optionally followed by `--numstat -z` records: `:<modes> <ids> <status>\0<path>\0` and
/// `<added>\t<deleted>\t<path>\0`.
fn parse_diff(output: &[u8]) -> Result<TreeDiff, String> {
    let mut diff = TreeDiff::default();
    let mut fields = nul_separated(output);
    while let Some(field) = fields.next() {
        if let Some(header) = field.strip_prefix(b":") {
            let letter = header.rsplit(|byte| *byte == b' ').next().and_then(|status| status.first().copied());
            let status = match letter {
                Some(b'A') => FileStatus::Added,
                Some(b'D') => FileStatus::Deleted,
                // `T`: the type changed (a file became a symlink); written back like any other change.
                Some(b'M' | b'T') => FileStatus::Modified,
                _ => return Err(format!("an unexpected change line {:?}", display(field))),
            };
            let path = fields.next().ok_or_else(|| format!("the change line {:?} has no path", display(field)))?;
            diff.changes.push(TreeChange { path: path.to_vec(), status });
        } else {
            let mut parts = field.splitn(3, |byte| *byte == b'\t');
            let (Some(added), Some(deleted), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
                return Err(format!("an unexpected numstat line {:?}", display(field)));
            };
            let number = |count: &[u8]| {
                std::str::from_utf8(count)
                    .ok()
                    .and_then(|count| count.parse::<u32>().ok())
                    .ok_or_else(|| format!("a line count {:?} in {:?}", display(count), display(field)))
            };
            let lines = if added == b"-" {
                LineCounts { additions: 0, deletions: 0, binary: true }
            } else {
                LineCounts { additions: number(added)?, deletions: number(deleted)?, binary: false }
            };
            diff.counts.insert(path.to_vec(), lines);
        }
    }
    Ok(diff)
}

/// A `.gitignore` anywhere in the tree.
fn is_ignore_file(path: &[u8]) -> bool {
    path.rsplit(|byte| *byte == b'/').next() == Some(b".gitignore".as_slice())
}

/// Whether `path` is one of the skipped paths or inside a skipped directory.
fn is_covered(path: &[u8], skipped: &[Skipped]) -> bool {
    skipped.iter().any(|skipped| {
        let skipped = skipped.path.as_bytes();
        path.strip_prefix(skipped).is_some_and(|rest| rest.is_empty() || rest.starts_with(b"/"))
    })
}

fn nul_separated(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes.split(|byte| *byte == 0).filter(|field| !field.is_empty())
}

fn trimmed(stdout: Vec<u8>, command: &'static str) -> Result<String, CheckpointError> {
    String::from_utf8(stdout)
        .map(|text| text.trim().to_owned())
        .ok()
        .filter(|id| !id.is_empty() && id.bytes().all(|byte| byte.is_ascii_hexdigit()))
        .ok_or_else(|| CheckpointError::UnexpectedOutput { command, detail: "not an object id".to_owned() })
}

/// A path as a person reads it; a name that is not UTF-8 shows replacement characters.
fn display(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

fn subcommand_of(args: &[OsString]) -> String {
    args.iter()
        .map(|arg| arg.to_string_lossy())
        .find(|arg| !arg.starts_with('-'))
        .map_or_else(|| "(no command)".to_owned(), |arg| arg.into_owned())
}

fn succeeded(output: GitOutput, subcommand: &str) -> Result<Vec<u8>, CheckpointError> {
    if output.status.success() { Ok(output.stdout) } else { Err(git_failed(subcommand, &output)) }
}

fn git_failed(subcommand: &str, output: &GitOutput) -> CheckpointError {
    CheckpointError::Git {
        command: subcommand.to_owned(),
        status: output.status,
        stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
    }
}
