//! `Workspace`: the one directory the tools may touch, and the path check that keeps them inside it.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

/// A directory the tools are confined to; its root is canonical.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Creates the directory if it is missing and canonicalizes it.
    pub fn new(root: impl Into<PathBuf>) -> io::Result<Self> {
        let root = root.into();
        std::fs::create_dir_all(&root)?;
        Ok(Self { root: root.canonicalize()? })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path the model gave (relative to the root, or absolute but inside it) to a path inside the workspace.
    ///
    /// Refuses `..` escapes, absolute paths outside the root, and any existing symlink on the way that points
    /// outside: the longest existing prefix is canonicalized and must lie under the root, and no component after it
    /// may exist (a dangling symlink there would let a write land outside). Nothing is touched either way.
    pub fn resolve(&self, user_path: &str) -> Result<PathBuf, String> {
        let given = Path::new(user_path);
        let joined = if given.is_absolute() { given.to_path_buf() } else { self.root.join(given) };
        let outside = || format!("{user_path} is outside the workspace");

        // `..` is applied lexically so that `link/..` cannot mean the parent of wherever `link` points.
        let mut normal = PathBuf::new();
        for component in joined.components() {
            match component {
                Component::ParentDir => {
                    if !normal.pop() {
                        return Err(outside());
                    }
                }
                Component::CurDir => {}
                other => normal.push(other),
            }
        }
        if !normal.starts_with(&self.root) && !given.is_absolute() {
            return Err(outside());
        }

        let mut rest: Vec<OsString> = Vec::new();
        let mut prefix = normal.as_path();
        let canonical = loop {
            match prefix.canonicalize() {
                Ok(canonical) => break canonical,
                Err(_) => {
                    if prefix.symlink_metadata().is_ok() {
                        return Err(format!("{user_path} goes through a dangling symlink"));
                    }
                    let name = prefix.file_name().ok_or_else(outside)?;
                    rest.push(name.to_os_string());
                    prefix = prefix.parent().ok_or_else(outside)?;
                }
            }
        };
        if !canonical.starts_with(&self.root) {
            return Err(outside());
        }
        let mut resolved = canonical;
        resolved.extend(rest.iter().rev());
        Ok(resolved)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn setup() -> (tempfile::TempDir, Workspace, PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws = Workspace::new(dir.path().join("ws")).expect("workspace");
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside).expect("outside dir");
        (dir, ws, outside)
    }

    #[test]
    fn new_creates_and_canonicalizes_the_root() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws = Workspace::new(dir.path().join("a/./b")).expect("workspace");
        assert!(ws.root().is_dir());
        assert_eq!(ws.root(), dir.path().canonicalize().expect("canonical").join("a/b"));
    }

    #[test]
    fn relative_and_inside_absolute_paths_resolve() {
        let (_dir, ws, _outside) = setup();
        let root = ws.root().to_path_buf();
        assert_eq!(ws.resolve("a/b.txt"), Ok(root.join("a/b.txt")));
        assert_eq!(ws.resolve("./a/../b.txt"), Ok(root.join("b.txt")));
        assert_eq!(ws.resolve("."), Ok(root.clone()));
        assert_eq!(ws.resolve(""), Ok(root.clone()));
        let abs = root.join("new/file.rs");
        assert_eq!(ws.resolve(abs.to_str().expect("utf-8")), Ok(abs));
        assert_eq!(ws.resolve(root.to_str().expect("utf-8")), Ok(root));
    }

    #[test]
    fn escapes_are_refused() {
        let (_dir, ws, outside) = setup();
        for bad in ["../x", "/etc/passwd", "a/../../x", "..", "../ws/../outside/x"] {
            let err = ws.resolve(bad).expect_err(bad);
            assert!(err.contains("outside the workspace"), "{bad}: {err}");
        }
        assert!(ws.resolve(outside.join("x").to_str().expect("utf-8")).is_err());
    }

    #[test]
    fn symlinks_pointing_outside_are_refused() {
        let (_dir, ws, outside) = setup();
        symlink(&outside, ws.root().join("out")).expect("dir symlink");
        std::fs::write(outside.join("secret"), "s").expect("secret");
        symlink(outside.join("secret"), ws.root().join("secret")).expect("file symlink");
        symlink(outside.join("not-yet"), ws.root().join("dangling")).expect("dangling symlink");
        for bad in ["out", "out/x", "out/new/dir/file", "secret", "dangling", "dangling/x"] {
            assert!(ws.resolve(bad).is_err(), "{bad}");
        }
        assert!(!outside.join("not-yet").exists());
    }

    #[test]
    fn symlinks_inside_resolve_to_their_target() {
        let (_dir, ws, _outside) = setup();
        std::fs::create_dir(ws.root().join("real")).expect("real dir");
        symlink(ws.root().join("real"), ws.root().join("alias")).expect("symlink");
        assert_eq!(ws.resolve("alias/f"), Ok(ws.root().join("real/f")));
    }
}
