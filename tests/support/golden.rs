//! Golden-file comparison with an explicit refresh switch (`UPDATE_GOLDEN=1`).

use std::path::{Path, PathBuf};

pub fn golden_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name)
}

/// Compares `actual` with the stored golden file.
///
/// With `UPDATE_GOLDEN=1` the file is rewritten and the test passes. Otherwise a
/// mismatch writes `actual` beside the golden (`<name>.actual`) for diffing and fails.
pub fn assert_golden(name: &str, actual: &str) {
    let path = golden_path(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading golden {}: {e} (run with UPDATE_GOLDEN=1 to create it)", path.display()));
    let actual_path =
        path.with_extension(format!("{}.actual", path.extension().and_then(|e| e.to_str()).unwrap_or_default()));
    if expected != actual {
        std::fs::write(&actual_path, actual).expect("writing the .actual file beside the golden");
        let first_difference = expected
            .lines()
            .zip(actual.lines())
            .position(|(e, a)| e != a)
            .map(|i| i + 1)
            .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()) + 1);
        panic!(
            "{} differs from the current output first at line {first_difference}; current output written to {} \
             (set UPDATE_GOLDEN=1 to accept it)",
            path.display(),
            actual_path.display()
        );
    }
    let _ = std::fs::remove_file(&actual_path);
}
