use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::*;

/// Small enough that a test makes files over it with `head -c`.
const CAP: u64 = 1024;

struct Workspace {
    _dir: tempfile::TempDir,
    root: PathBuf,
    checkpoints: Checkpoints,
}

/// A path's content (a symlink's target) and permission bits; a directory is listed with a trailing `/`.
type Tree = BTreeMap<String, (Vec<u8>, u32)>;

fn workspace() -> Workspace {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("workspace");
    fs::create_dir(&root).unwrap();
    let checkpoints = Checkpoints::new(dir.path().join("data/checkpoints/session-1"), root.clone(), CAP);
    Workspace { _dir: dir, root, checkpoints }
}

impl Workspace {
    /// Changes files the way the agent's `bash` tool does, behind the checkpoints' back.
    fn sh(&self, script: &str) {
        let status = std::process::Command::new("sh").arg("-c").arg(script).current_dir(&self.root).status().unwrap();
        assert!(status.success(), "`{script}` failed: {status}");
    }

    fn read(&self, path: &str) -> String {
        fs::read_to_string(self.root.join(path)).unwrap_or_else(|error| panic!("reading {path}: {error}"))
    }

    fn present(&self, path: &str) -> bool {
        fs::symlink_metadata(self.root.join(path)).is_ok()
    }

    fn mode(&self, path: &str) -> u32 {
        fs::metadata(self.root.join(path)).unwrap().permissions().mode()
    }

    fn modified(&self, path: &str) -> SystemTime {
        fs::metadata(self.root.join(path)).unwrap().modified().unwrap()
    }

    /// Everything under `under` (relative to the workspace), `.git` included.
    fn tree(&self, under: &str) -> Tree {
        let mut tree = Tree::new();
        collect(&self.root.join(under), "", &mut tree);
        tree
    }

    /// Everything in the workspace but a `.git` of its own.
    fn files(&self) -> Tree {
        let mut tree = self.tree("");
        tree.retain(|path, _| !path.starts_with(".git/"));
        tree
    }
}

fn collect(directory: &std::path::Path, prefix: &str, tree: &mut Tree) {
    for entry in fs::read_dir(directory).unwrap() {
        let entry = entry.unwrap();
        let name = format!("{prefix}{}", entry.file_name().to_str().unwrap());
        let metadata = fs::symlink_metadata(entry.path()).unwrap();
        let mode = metadata.permissions().mode();
        if metadata.is_dir() {
            tree.insert(format!("{name}/"), (Vec::new(), mode));
            collect(&entry.path(), &format!("{name}/"), tree);
        } else if metadata.is_symlink() {
            let target = fs::read_link(entry.path()).unwrap();
            tree.insert(name, (target.into_os_string().into_encoded_bytes(), mode));
        } else {
            tree.insert(name, (fs::read(entry.path()).unwrap(), mode));
        }
    }
}

fn sorted(mut paths: Vec<String>) -> Vec<String> {
    paths.sort();
    paths
}

fn paths(changes: &Changes) -> Vec<&str> {
    changes.files.iter().map(|file| file.path.as_str()).collect()
}

#[tokio::test]
async fn a_restore_undoes_what_a_shell_command_changed_created_and_deleted() {
    let ws = workspace();
    ws.sh("printf 'one\\n' > kept.txt; printf 'old\\n' > changed.txt; printf 'bye\\n' > deleted.txt; \
         mkdir -p 'dir with space'; printf 'ü\\n' > 'dir with space/ünïcödé.txt'");
    let at_checkpoint = ws.files();
    ws.checkpoints.record("before/run-1").await.unwrap();

    ws.sh("printf 'new\\n' > changed.txt; printf 'more\\n' >> 'dir with space/ünïcödé.txt'; rm deleted.txt; \
         mkdir -p made/deep; printf 'x\\n' > made/deep/new.txt; ln -s kept.txt link");
    let restored = ws.checkpoints.restore("before/run-1").await.unwrap();

    assert_eq!(ws.files(), at_checkpoint, "the directories made since are gone too");
    assert_eq!(sorted(restored.changed), ["changed.txt", "dir with space/ünïcödé.txt"]);
    assert_eq!(sorted(restored.removed), ["link", "made/deep/new.txt"]);
    assert_eq!(restored.recreated, ["deleted.txt"]);
    assert!(restored.backup.starts_with("restore-backup/"), "{}", restored.backup);
    assert!(ws.checkpoints.exists(&restored.backup).await);
}

#[tokio::test]
async fn a_restore_of_the_touched_paths_leaves_every_other_change_alone() {
    let ws = workspace();
    ws.sh("printf 'a\\n' > a.txt; printf 'mine\\n' > mine.txt");
    ws.checkpoints.record("before/run-1").await.unwrap();
    ws.sh("printf 'run\\n' > a.txt; printf 'made by the run\\n' > b.txt");
    ws.checkpoints.record("after/run-1").await.unwrap();
    // Someone else's changes since: not the run's, so not the restore's.
    ws.sh("printf 'edited by hand\\n' > mine.txt; printf 'new by hand\\n' > c.txt");
    let touched: BTreeSet<String> = ws
        .checkpoints
        .changes("before/run-1", "after/run-1")
        .await
        .unwrap()
        .files
        .into_iter()
        .map(|file| file.path)
        .collect();

    let restored = ws.checkpoints.restore_touched("before/run-1", &touched).await.unwrap();

    assert_eq!((restored.changed, restored.removed), (vec!["a.txt".to_owned()], vec!["b.txt".to_owned()]));
    assert_eq!(ws.read("a.txt"), "a\n");
    assert!(!ws.present("b.txt"));
    assert_eq!(ws.read("mine.txt"), "edited by hand\n");
    assert_eq!(ws.read("c.txt"), "new by hand\n");
}

#[tokio::test]
async fn restoring_the_backup_undoes_the_restore() {
    let ws = workspace();
    ws.sh("printf 'a\\n' > a.txt; printf 'b\\n' > b.txt");
    let at_checkpoint = ws.files();
    ws.checkpoints.record("before/run-1").await.unwrap();
    ws.sh("printf 'changed\\n' > a.txt; rm b.txt; mkdir -p d/e; printf 'f\\n' > d/e/f.txt; printf 'c\\n' > c.txt");
    let after_the_run = ws.files();

    let first = ws.checkpoints.restore("before/run-1").await.unwrap();
    assert_eq!(ws.files(), at_checkpoint);
    let second = ws.checkpoints.restore(&first.backup).await.unwrap();

    assert_eq!(ws.files(), after_the_run);
    assert_ne!(first.backup, second.backup, "each restore keeps its own backup");
}

#[tokio::test]
async fn a_file_over_the_cap_is_left_out_reported_and_left_alone() {
    let ws = workspace();
    ws.sh("head -c 5000 /dev/zero > big.bin; head -c 3000 /dev/zero > shrinks.bin; printf 'small\\n' > grows.txt");
    ws.sh("printf 'a\\n' > a.txt");
    let before = ws.checkpoints.record("before/run-1").await.unwrap();
    let mut skipped = before.skipped.clone();
    skipped.sort_by(|one, other| one.path.cmp(&other.path));
    assert_eq!(
        skipped,
        [
            Skipped { path: "big.bin".into(), reason: SkipReason::TooLarge { bytes: 5000 } },
            Skipped { path: "shrinks.bin".into(), reason: SkipReason::TooLarge { bytes: 3000 } },
        ]
    );

    ws.sh("head -c 2000 /dev/zero | tr '\\000' x > grows.txt; printf 'more' >> big.bin; printf 'b\\n' > a.txt");
    ws.sh("printf 'now small' > shrinks.bin");
    let after = ws.checkpoints.record("after/run-1").await.unwrap();
    let mut skipped = after.skipped.clone();
    skipped.sort_by(|one, other| one.path.cmp(&other.path));
    assert_eq!(
        skipped,
        [
            Skipped { path: "big.bin".into(), reason: SkipReason::TooLarge { bytes: 5004 } },
            Skipped { path: "grows.txt".into(), reason: SkipReason::TooLarge { bytes: 2000 } },
        ]
    );

    let changes = ws.checkpoints.changes("before/run-1", "after/run-1").await.unwrap();
    assert_eq!(paths(&changes), ["a.txt"], "a file that grew past the cap was not deleted, nor one that shrank added");
    assert!(!changes.diff.contains("grows.txt") && !changes.diff.contains("shrinks.bin"), "{}", changes.diff);
    let mut skipped: Vec<&str> = changes.skipped.iter().map(|skipped| skipped.path.as_str()).collect();
    skipped.sort();
    assert_eq!(skipped, ["big.bin", "grows.txt", "shrinks.bin"]);

    let restored = ws.checkpoints.restore("before/run-1").await.unwrap();
    assert_eq!(ws.read("a.txt"), "a\n");
    assert_eq!(ws.read("grows.txt"), "x".repeat(2000), "the small version recorded earlier is not written back");
    assert_eq!(fs::read(ws.root.join("big.bin")).unwrap().len(), 5004);
    assert_eq!(ws.read("shrinks.bin"), "now small", "a file too large to record then existed then");
    assert_eq!(restored.changed, ["a.txt"]);
    assert!(restored.removed.is_empty() && restored.recreated.is_empty(), "{restored:?}");
}

#[tokio::test]
async fn ignored_paths_are_never_recorded_changed_or_removed() {
    let ws = workspace();
    ws.sh("printf '*.log\\nbuild/\\n' > .gitignore; printf 'first\\n' > app.log; printf 'code\\n' > main.rs");
    ws.checkpoints.record("before/run-1").await.unwrap();
    ws.sh("printf 'second\\n' >> app.log; mkdir build; printf 'o' > build/out.o; printf 'changed\\n' > main.rs");
    ws.checkpoints.record("after/run-1").await.unwrap();

    let changes = ws.checkpoints.changes("before/run-1", "after/run-1").await.unwrap();
    assert_eq!(paths(&changes), ["main.rs"]);
    assert!(!changes.diff.contains("app.log") && !changes.diff.contains("build/"), "{}", changes.diff);

    let restored = ws.checkpoints.restore("before/run-1").await.unwrap();
    assert_eq!(ws.read("main.rs"), "code\n");
    assert_eq!(ws.read("app.log"), "first\nsecond\n");
    assert_eq!(ws.read("build/out.o"), "o");
    assert!(restored.removed.is_empty(), "{restored:?}");
}

#[tokio::test]
async fn a_file_ignored_at_the_checkpoint_stays_when_the_run_dropped_its_rule() {
    let ws = workspace();
    ws.sh("printf '.env\\nnode_modules/\\n' > .gitignore; printf 'SECRET=1\\n' > .env; mkdir -p node_modules/x");
    ws.sh("printf 'lib\\n' > node_modules/x/index.js; printf 'code\\n' > main.rs");
    ws.checkpoints.record("before/run-1").await.unwrap();
    ws.sh("rm .gitignore; printf 'changed\\n' > main.rs");
    ws.checkpoints.record("after/run-1").await.unwrap();
    let changes = ws.checkpoints.changes("before/run-1", "after/run-1").await.unwrap();
    assert!(paths(&changes).contains(&".env"), "without its rule the file is recorded: {changes:?}");

    let restored = ws.checkpoints.restore("before/run-1").await.unwrap();

    assert_eq!(ws.read(".gitignore"), ".env\nnode_modules/\n");
    assert_eq!(ws.read(".env"), "SECRET=1\n");
    assert_eq!(ws.read("node_modules/x/index.js"), "lib\n");
    assert_eq!(ws.read("main.rs"), "code\n");
    assert!(restored.removed.is_empty(), "{restored:?}");
    assert_eq!(sorted(restored.recreated), [".gitignore"]);
}

#[tokio::test]
async fn files_the_run_did_not_touch_keep_their_modification_time() {
    let ws = workspace();
    ws.sh("mkdir src; for i in 1 2 3; do printf \"$i\\n\" > src/f$i.txt; done; printf 'x\\n' > edited.txt");
    let long_ago = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    let untouched = ["src/f1.txt", "src/f2.txt", "src/f3.txt"];
    for path in untouched {
        fs::File::options().write(true).open(ws.root.join(path)).unwrap().set_modified(long_ago).unwrap();
    }
    ws.checkpoints.record("before/run-1").await.unwrap();

    ws.sh("printf 'y\\n' > edited.txt; printf 'n\\n' > src/new.txt");
    ws.checkpoints.record("after/run-1").await.unwrap();
    let restored = ws.checkpoints.restore("before/run-1").await.unwrap();

    assert_eq!(ws.read("edited.txt"), "x\n");
    assert!(!ws.present("src/new.txt"));
    assert_eq!(restored.changed, ["edited.txt"]);
    for path in untouched {
        assert_eq!(ws.modified(path), long_ago, "{path} was rewritten");
    }
}

#[tokio::test]
async fn a_workspace_that_is_a_git_repository_keeps_its_git_directory_and_index() {
    let ws = workspace();
    ws.sh("git init -q . && printf 'tracked\\n' > tracked.txt && git add tracked.txt && \
         git -c user.name=t -c user.email=t@example.com commit -qm one && \
         printf 'staged\\n' > staged.txt && git add staged.txt");
    let git_dir = ws.tree(".git");
    assert!(git_dir.contains_key("index"), "the test's repository has an index to keep");

    ws.checkpoints.record("before/run-1").await.unwrap();
    ws.sh("printf 'changed\\n' > tracked.txt; rm staged.txt; printf 'new\\n' > new.txt");
    ws.checkpoints.record("after/run-1").await.unwrap();
    let changes = ws.checkpoints.changes("before/run-1", "after/run-1").await.unwrap();
    assert_eq!(paths(&changes), ["new.txt", "staged.txt", "tracked.txt"]);
    ws.checkpoints.restore("before/run-1").await.unwrap();

    assert_eq!(ws.tree(".git"), git_dir);
    assert_eq!(ws.read("tracked.txt"), "tracked\n");
    assert_eq!(ws.read("staged.txt"), "staged\n");
    assert!(!ws.present("new.txt"));
}

#[tokio::test]
async fn changes_count_the_lines_of_a_known_edit() {
    let ws = workspace();
    ws.sh(
        "printf '1\\n2\\n3\\n4\\n5\\n' > edited.txt; printf 'a\\nb\\nc\\n' > deleted.txt; printf 'same\\n' > mode.sh",
    );
    ws.checkpoints.record("before/run-1").await.unwrap();
    ws.sh("printf '1\\ntwo\\n3\\n4\\n5\\n6\\n7\\n' > edited.txt; rm deleted.txt; printf 'new\\n' > added.txt; \
         printf 'z\\000z' > blob.bin; chmod +x mode.sh");
    ws.checkpoints.record("after/run-1").await.unwrap();

    let changes = ws.checkpoints.changes("before/run-1", "after/run-1").await.unwrap();
    let file = |path: &str, status, additions, deletions, binary| FileChange {
        path: path.into(),
        status,
        additions,
        deletions,
        binary,
    };
    assert_eq!(
        changes.files,
        [
            file("added.txt", FileStatus::Added, 1, 0, false),
            file("blob.bin", FileStatus::Added, 0, 0, true),
            file("deleted.txt", FileStatus::Deleted, 0, 3, false),
            file("edited.txt", FileStatus::Modified, 3, 1, false),
            file("mode.sh", FileStatus::Modified, 0, 0, false),
        ]
    );
    assert_eq!((changes.additions, changes.deletions), (4, 4));
    for expected in [
        "diff --git a/edited.txt b/edited.txt\n",
        "-2\n+two\n",
        "+6\n+7\n",
        "Binary files /dev/null and b/blob.bin differ\n",
        "diff --git a/mode.sh b/mode.sh\nold mode 100644\nnew mode 100755\n",
        "--- a/deleted.txt\n+++ /dev/null\n",
    ] {
        assert!(changes.diff.contains(expected), "{expected:?} is not in\n{}", changes.diff);
    }

    let unchanged = ws.checkpoints.changes("after/run-1", "after/run-1").await.unwrap();
    assert!(unchanged.files.is_empty() && unchanged.diff.is_empty(), "{unchanged:?}");
}

#[tokio::test]
async fn the_executable_bit_comes_back() {
    let ws = workspace();
    ws.sh("printf '#!/bin/sh\\n' > run.sh; chmod +x run.sh; printf 'data\\n' > data.txt");
    ws.checkpoints.record("before/run-1").await.unwrap();
    ws.sh("chmod -x run.sh; chmod +x data.txt");

    let restored = ws.checkpoints.restore("before/run-1").await.unwrap();

    assert_ne!(ws.mode("run.sh") & 0o111, 0);
    assert_eq!(ws.mode("data.txt") & 0o111, 0);
    assert_eq!(sorted(restored.changed), ["data.txt", "run.sh"]);
}

#[tokio::test]
async fn names_that_are_not_plain_ref_components_are_refused() {
    let ws = workspace();
    let too_long = "a".repeat(201);
    for name in [
        "",
        "/run",
        "run/",
        "before//run",
        "../run",
        "a..b",
        ".hidden",
        "run.",
        "run.lock",
        "run 1",
        "run:1",
        "run~1",
        "run^",
        "a\\b",
        "ünï",
        "@{1}",
        "run*",
        "run?",
        "run\n",
        too_long.as_str(),
    ] {
        let error = ws.checkpoints.record(name).await.unwrap_err();
        assert!(matches!(error, CheckpointError::InvalidName { .. }), "{name:?}: {error}");
        assert!(error.to_string().contains(&format!("{name:?}")), "{error}");
        assert!(matches!(ws.checkpoints.restore(name).await, Err(CheckpointError::InvalidName { .. })), "{name:?}");
        assert!(!ws.checkpoints.exists(name).await, "{name:?}");
    }
    for name in ["before/run-abc123", "after/run-ABC_1.2", "restore-backup/1700000000000-2"] {
        ws.checkpoints.record(name).await.unwrap();
        assert!(ws.checkpoints.exists(name).await, "{name}");
    }
}

#[tokio::test]
async fn an_empty_workspace_and_empty_directories_are_recorded_and_restored() {
    let ws = workspace();
    ws.checkpoints.record("before/run-1").await.unwrap();
    let nothing = ws.checkpoints.changes("before/run-1", "before/run-1").await.unwrap();
    assert!(nothing.files.is_empty());

    ws.sh("mkdir -p empty/dir made/deep; printf 'x' > made/deep/file");
    ws.checkpoints.record("after/run-1").await.unwrap();
    let changes = ws.checkpoints.changes("before/run-1", "after/run-1").await.unwrap();
    assert_eq!(paths(&changes), ["made/deep/file"]);

    let restored = ws.checkpoints.restore("before/run-1").await.unwrap();
    assert_eq!(restored.removed, ["made/deep/file"]);
    assert!(!ws.present("made"), "the directories the removed file leaves empty go");
    assert!(ws.present("empty/dir"), "a directory no checkpoint knows is not touched");
}

#[tokio::test]
async fn an_unknown_checkpoint_or_workspace_is_a_clear_error() {
    let ws = workspace();
    let error = ws.checkpoints.restore("before/run-missing").await.unwrap_err();
    assert!(matches!(error, CheckpointError::Unknown { .. }), "{error}");
    assert!(error.to_string().contains("before/run-missing"), "{error}");

    ws.checkpoints.record("before/run-1").await.unwrap();
    let error = ws.checkpoints.changes("before/run-1", "after/run-missing").await.unwrap_err();
    assert_eq!(error.to_string(), "there is no checkpoint named \"after/run-missing\"");
    assert!(!ws.checkpoints.exists("after/run-missing").await);

    let nowhere = Checkpoints::new(ws.root.join("shadow"), ws.root.join("no-such-dir"), CAP);
    let error = nowhere.record("before/run-1").await.unwrap_err();
    assert!(matches!(error, CheckpointError::NoWorkTree { .. }), "{error}");
}

#[tokio::test]
async fn a_repository_inside_the_workspace_is_left_out_and_left_alone() {
    let ws = workspace();
    ws.sh("mkdir clone && cd clone && git init -q . && printf 'theirs\\n' > file.txt && cd .. && printf 'ours\\n' > ours.txt");
    let recorded = ws.checkpoints.record("before/run-1").await.unwrap();
    assert_eq!(recorded.skipped, [Skipped { path: "clone".into(), reason: SkipReason::Repository }]);

    ws.sh("printf 'changed\\n' > clone/file.txt; printf 'new\\n' > clone/new.txt; printf 'changed\\n' > ours.txt");
    let restored = ws.checkpoints.restore("before/run-1").await.unwrap();

    assert_eq!(restored.changed, ["ours.txt"]);
    assert_eq!(ws.read("ours.txt"), "ours\n");
    assert_eq!(ws.read("clone/file.txt"), "changed\n");
    assert_eq!(ws.read("clone/new.txt"), "new\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_from_several_tasks_wait_for_each_other() {
    let ws = Arc::new(workspace());
    ws.sh("for i in $(seq 1 50); do printf \"$i\\n\" > f$i.txt; done");
    let tasks: Vec<_> = (0..8)
        .map(|task| {
            let ws = Arc::clone(&ws);
            tokio::spawn(async move {
                ws.sh(&format!("printf 'task {task}\\n' > f{task}.txt"));
                ws.checkpoints.record(&format!("concurrent/{task}")).await
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    for task in 0..8 {
        assert!(ws.checkpoints.exists(&format!("concurrent/{task}")).await);
    }
}
