//! The `ipython` tool: runs a cell of Python code with the system `python3` in the workspace, each call in a fresh
//! interpreter, the way `bash` runs a command (own process group, timeout, live output, long output kept in a file).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tokio::process::Command;

use super::bash::{Program, run_program};
use super::{Args, Tool, ToolContext, ToolFuture, ToolLimits, try_arg};

/// The program `python3 -c` runs: it reads the cell from standard input and runs it as `__main__`.
const CELL_RUNNER: &str = include_str!("python_cell.py");

pub(crate) struct PythonTool {
    python: PathBuf,
    limits: ToolLimits,
}

impl PythonTool {
    pub(crate) fn new(python: PathBuf, limits: ToolLimits) -> Self {
        Self { python, limits }
    }
}

impl Tool for PythonTool {
    fn name(&self) -> &'static str {
        "ipython"
    }

    fn description(&self) -> &'static str {
        "Run Python 3 code in the workspace root and return what it printed (stdout and stderr). Every call starts a \
         fresh interpreter: nothing is kept between calls, so import and define what you need each time (save data \
         to files to keep it). The value of a last bare expression is printed, as in a notebook cell; an exception \
         shows its traceback. Long output keeps only its tail; the full output is saved to a log file whose path \
         is given."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "code": { "type": "string", "description": "The Python code to run" },
                "timeout": { "type": "number", "description": "Timeout in seconds (optional)" }
            },
            "required": ["code"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        false
    }

    fn run<'a>(&'a self, args: Value, ctx: ToolContext<'a>) -> ToolFuture<'a> {
        Box::pin(async move {
            let args = try_arg!(Args::new(&args));
            let code = try_arg!(args.string("code"));
            let timeout = try_arg!(args.opt_seconds("timeout")).unwrap_or(self.limits.bash_timeout);
            let mut python = Command::new(&self.python);
            python.arg("-u").arg("-c").arg(CELL_RUNNER);
            let program = Program {
                label: "python3",
                command: python,
                stdin: Some(code.as_bytes().to_vec()),
                log_prefix: "python",
            };
            run_program(program, timeout, self.limits.max_output_bytes, &ctx).await
        })
    }
}

/// The `python3` on `PATH` that runs, with its version (`Python 3.11.2`); `None` when there is none.
pub fn find_python3() -> Option<(PathBuf, String)> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("python3")).find_map(|candidate| {
        let version = python_version(&candidate)?;
        Some((candidate, version))
    })
}

/// What `python --version` says, if it is an executable that runs and says it is Python 3.
fn python_version(python: &Path) -> Option<String> {
    if !python.is_file() {
        return None;
    }
    let output =
        std::process::Command::new(python).arg("--version").stdin(std::process::Stdio::null()).output().ok()?;
    if !output.status.success() {
        return None;
    }
    // Python 2 wrote its version to standard error; 3 writes it to standard output.
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    version.starts_with("Python 3").then_some(version)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use tokio_util::sync::CancellationToken;

    use super::super::test_support::*;
    use super::*;

    fn tool() -> PythonTool {
        tool_with(ToolLimits::default())
    }

    fn tool_with(limits: ToolLimits) -> PythonTool {
        let (python, _) = find_python3().expect("python3 on PATH (./x installs it)");
        PythonTool::new(python, limits)
    }

    #[tokio::test]
    async fn prints_output_and_the_last_expression() {
        let (_dir, ws) = workspace();
        let code = "import math\nprint('radius 2')\nround(math.pi * 2 ** 2, 3)";
        let out = run(&tool(), &ws, json!({ "code": code })).await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(out.text, "radius 2\n12.566\n");
    }

    #[tokio::test]
    async fn runs_in_the_workspace_and_imports_from_it() {
        let (_dir, ws) = workspace();
        std::fs::write(ws.root().join("helper.py"), "ANSWER = 42\n").unwrap();
        let code = "import os, helper\nprint(os.getcwd())\nprint(helper.ANSWER)\nopen('made.txt', 'w').write('x')";
        let out = run(&tool(), &ws, json!({ "code": code })).await;
        assert_eq!(out.text, format!("{}\n42\n1\n", ws.root().display()));
        assert!(ws.root().join("made.txt").is_file());
    }

    #[tokio::test]
    async fn an_exception_shows_its_traceback_and_exits_with_1() {
        let (_dir, ws) = workspace();
        let code = "def ratio(a, b):\n    return a / b\n\nprint('before')\nratio(1, 0)\n";
        let out = run(&tool(), &ws, json!({ "code": code })).await;
        assert!(out.is_error);
        let (printed, notice) = out.text.rsplit_once("\n\n").unwrap();
        let printed = printed.trim_end();
        assert_eq!(notice, "Command exited with code 1");
        assert!(printed.starts_with("before\nTraceback (most recent call last):\n"), "{printed}");
        assert!(printed.contains("File \"<cell>\", line 5, in <module>\n    ratio(1, 0)"), "{printed}");
        assert!(printed.contains("line 2, in ratio\n    return a / b"), "{printed}");
        assert!(printed.ends_with("ZeroDivisionError: division by zero"), "{printed}");
        assert!(!printed.contains("<string>"), "the runner's own frame shows: {printed}");
    }

    #[tokio::test]
    async fn a_syntax_error_and_sys_exit_keep_their_codes() {
        let (_dir, ws) = workspace();
        let out = run(&tool(), &ws, json!({ "code": "print('never'\n" })).await;
        assert!(out.is_error);
        assert!(out.text.contains("SyntaxError") && !out.text.starts_with("never"), "{}", out.text);
        assert!(out.text.ends_with("Command exited with code 1"), "{}", out.text);
        let out = run(&tool(), &ws, json!({ "code": "import sys\nprint('bye')\nsys.exit(3)" })).await;
        assert_eq!(out.text, "bye\n\n\nCommand exited with code 3");
    }

    #[tokio::test]
    async fn each_call_is_a_fresh_interpreter_with_empty_stdin() {
        let (_dir, ws) = workspace();
        let tool = tool();
        run(&tool, &ws, json!({ "code": "kept = 1" })).await;
        let out = run(&tool, &ws, json!({ "code": "print('kept' in globals())\ninput()" })).await;
        assert!(out.text.starts_with("False\nTraceback"), "{}", out.text);
        assert!(out.text.contains("EOFError"), "{}", out.text);
    }

    #[tokio::test]
    async fn timeout_kills_it_and_its_children() {
        let (dir, ws) = workspace();
        let pid_file = dir.path().join("child.pid");
        let code = format!(
            "import subprocess, time\np = subprocess.Popen(['sleep', '1000'])\nopen({:?}, 'w').write(str(p.pid))\n\
             print('started')\ntime.sleep(1000)",
            pid_file.display().to_string()
        );
        let out = within_hang_guard(run(&tool(), &ws, json!({ "code": code, "timeout": 1 }))).await;
        assert!(out.is_error);
        assert_eq!(out.text, "started\n\n\nCommand timed out after 1 seconds");
        let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(3);
        let pid = rustix::process::Pid::from_raw(pid).expect("a real pid");
        while rustix::process::test_kill_process(pid).is_ok() {
            assert!(Instant::now() < deadline, "the child sleep {pid} survived");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[tokio::test]
    async fn cancel_stops_it() {
        let (_dir, ws) = workspace();
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        // Stopped once its output is seen, not after a fixed wait: on a loaded machine Python may take longer than
        // any wait to start and print.
        let seen = std::sync::Mutex::new(Vec::new());
        let progress = |output: super::super::ToolOutput| {
            if output.text == "working\n" {
                trigger.cancel();
            }
            seen.lock().expect("progress lock").push(output);
        };
        let tool = tool();
        let code = "import time\nprint('working')\ntime.sleep(1000)";
        let context = ToolContext { workspace: &ws, cancel, progress: &progress };
        let out = within_hang_guard(tool.run(json!({ "code": code }), context)).await;
        assert_eq!(out.text, "working\n\n\nCommand aborted");
        let progress = seen.into_inner().expect("progress lock");
        assert!(progress.iter().any(|p| p.text == "working\n"), "live output: {progress:?}");
    }

    #[tokio::test]
    async fn long_output_keeps_the_tail_and_logs_everything() {
        let (_dir, ws) = workspace();
        let tool = tool_with(ToolLimits { max_output_bytes: 1000, ..ToolLimits::default() });
        let out = run(&tool, &ws, json!({ "code": "for i in range(1, 2001):\n    print(i)" })).await;
        let full: String = (1..=2000).map(|i| format!("{i}\n")).collect();
        assert!(!out.is_error);
        let details = out.details.clone().expect("details");
        let path = details["fullOutputPath"].as_str().unwrap();
        assert!(path.starts_with(".chatwire/python-") && path.ends_with(".log"), "{path}");
        assert_eq!(std::fs::read_to_string(ws.root().join(path)).unwrap(), full);
        assert_eq!(details["truncation"]["totalBytes"], full.len());
        let (body, _) = out.text.split_once("\n\n[Showing the last").expect("notice");
        assert!(full.ends_with(body) && body.ends_with("2000\n"), "{body}");
    }

    #[tokio::test]
    async fn code_is_required() {
        let (_dir, ws) = workspace();
        let out = run(&tool(), &ws, json!({ "source": "1" })).await;
        assert!(out.is_error && out.text.contains("`code`"), "{}", out.text);
    }

    #[test]
    fn python3_is_found_with_its_version() {
        let (path, version) = find_python3().expect("python3 on PATH");
        assert!(path.ends_with("python3"), "{}", path.display());
        assert!(version.starts_with("Python 3."), "{version}");
        assert_eq!(python_version(Path::new("/nonexistent/python3")), None);
    }
}
