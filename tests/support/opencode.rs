//! The real opencode for the tests and the ACP bench: where `./x test` installs it, and the environment that runs it
//! isolated (its home and XDG directories in a temporary directory, no update, models or share fetches, no plugin
//! install) with the fake OpenAI-compatible server as its only model.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

pub const VERSION: &str = "1.18.33";

/// `CHATWIRE_TEST_OPENCODE`, else the copy `./x test` installs into the cache; `None` when it is not there.
pub fn executable() -> Option<PathBuf> {
    let opencode = match std::env::var_os("CHATWIRE_TEST_OPENCODE") {
        Some(path) => PathBuf::from(path),
        None => {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache"));
            cache.join(format!("chatwire/opencode-{VERSION}/node_modules/.bin/opencode"))
        }
    };
    opencode.is_file().then_some(opencode)
}

/// The environment of an opencode whose files are all under `home` and whose model is the server at `model_url`;
/// `extra` goes into its configuration (e.g. permission rules).
pub fn isolated_env(home: &Path, model_url: &str, extra: Value) -> BTreeMap<String, String> {
    // opencode installs its plugin package into its config dir from the npm registry in the background unless that
    // dir already has a node_modules and a lock that lists it.
    let config_dir = home.join("config/opencode");
    std::fs::create_dir_all(config_dir.join("node_modules")).expect("the config dir is made");
    let plugin = json!({"@opencode-ai/plugin": VERSION});
    std::fs::write(config_dir.join("package.json"), json!({"dependencies": plugin}).to_string()).expect("written");
    let lock = json!({"lockfileVersion": 3, "packages": {"": {"dependencies": plugin}}});
    std::fs::write(config_dir.join("package-lock.json"), lock.to_string()).expect("written");
    let mut config = json!({
        "provider": {"fake": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Fake",
            "options": {"baseURL": model_url, "apiKey": "test-key"},
            "models": {"fake-model": {"name": "Fake Model", "reasoning": true, "tool_call": true,
                "limit": {"context": 100000, "output": 8192}}},
        }},
        "model": "fake/fake-model",
        "small_model": "fake/fake-model",
    });
    if let (Some(config), Value::Object(extra)) = (config.as_object_mut(), extra) {
        config.extend(extra);
    }
    let mut env = BTreeMap::new();
    env.insert("HOME".to_owned(), home.display().to_string());
    for (key, dir) in [
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_STATE_HOME", "state"),
    ] {
        env.insert(key.to_owned(), home.join(dir).display().to_string());
    }
    for flag in [
        "OPENCODE_DISABLE_AUTOUPDATE",
        "OPENCODE_DISABLE_MODELS_FETCH",
        "OPENCODE_DISABLE_SHARE",
        "OPENCODE_DISABLE_LSP_DOWNLOAD",
    ] {
        env.insert(flag.to_owned(), "1".to_owned());
    }
    env.insert("OPENCODE_CONFIG_CONTENT".to_owned(), config.to_string());
    env
}
