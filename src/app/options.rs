//! The Leptos options the server runs the app with: `Leptos.toml`, compiled in so that the binary needs no file
//! beside it, under the `LEPTOS_*` environment variables cargo-leptos sets when it runs the server, which win.

use leptos::config::errors::LeptosConfigError;
use leptos::config::{LeptosOptions, get_config_from_str};

/// `Leptos.toml` as it was when the binary was built.
pub const LEPTOS_TOML: &str = include_str!("../../Leptos.toml");

/// Leptos' reader takes the keys after this header for the options; `Leptos.toml` has them at its top level.
const SECTION_HEADER: &str = "[package.metadata.leptos]\n";

/// `Leptos.toml`'s options, with each `LEPTOS_<KEY>` of the environment in place of its key.
pub fn leptos_options() -> Result<LeptosOptions, LeptosConfigError> {
    get_config_from_str(&format!("{SECTION_HEADER}{LEPTOS_TOML}"))
}

#[cfg(test)]
mod tests {
    use super::{LEPTOS_TOML, leptos_options};

    /// The keys cargo-leptos 0.3 hands the server it runs, from its own settings (its `ProjectConfig::to_envs`);
    /// the server reads them as Leptos options.
    const HANDED_TO_THE_SERVER: [&str; 9] = [
        "output-name",
        "site-root",
        "site-pkg-dir",
        "site-addr",
        "reload-port",
        "hash-files",
        "server-fn-prefix",
        "disable-server-fn-hash",
        "server-fn-mod-path",
    ];

    fn leptos_toml() -> toml::Table {
        LEPTOS_TOML.parse().expect("Leptos.toml is TOML")
    }

    fn cargo_leptos_section() -> toml::Table {
        let cargo: toml::Table = include_str!("../../Cargo.toml").parse().expect("Cargo.toml is TOML");
        cargo
            .get("package")
            .and_then(|package| package.get("metadata"))
            .and_then(|metadata| metadata.get("leptos"))
            .and_then(toml::Value::as_table)
            .cloned()
            .expect("Cargo.toml has a [package.metadata.leptos] section")
    }

    #[test]
    fn leptos_toml_and_cargo_toml_agree_on_every_key_they_share() {
        let (options, build) = (leptos_toml(), cargo_leptos_section());
        for (key, value) in &options {
            if let Some(built) = build.get(key) {
                assert_eq!(value, built, "`{key}`: Leptos.toml says {value}, Cargo.toml says {built}");
            }
        }
        // A key cargo-leptos hands the server but only one file names would still differ: cargo-leptos (or the
        // server) would take its default for it.
        for key in HANDED_TO_THE_SERVER {
            assert_eq!(
                options.contains_key(key),
                build.contains_key(key),
                "`{key}` is in only one of Leptos.toml and Cargo.toml's [package.metadata.leptos]"
            );
        }
        assert!(options.contains_key("output-name"), "Leptos.toml names the WASM and JS files the page loads");
    }

    /// Not a test of its own: `leptos_variables_in_the_environment_win_over_leptos_toml` runs it in a child
    /// process with the environment it needs (setting variables while other tests run would be unsound).
    #[test]
    #[ignore = "run by leptos_variables_in_the_environment_win_over_leptos_toml"]
    fn print_the_options() {
        let options = leptos_options().expect("Leptos.toml holds valid Leptos options");
        println!(
            "options: output-name={} site-addr={} hash-files={}",
            options.output_name, options.site_addr, options.hash_files
        );
    }

    #[test]
    fn leptos_variables_in_the_environment_win_over_leptos_toml() {
        let (_crate, module) = module_path!().split_once("::").expect("a test module's path names its crate");
        let child = std::process::Command::new(std::env::current_exe().expect("the test binary's path"))
            .args(["--exact", &format!("{module}::print_the_options"), "--ignored", "--nocapture"])
            .env_remove("LEPTOS_OUTPUT_NAME")
            .env("LEPTOS_SITE_ADDR", "127.0.0.1:3999")
            .env("LEPTOS_HASH_FILES", "false")
            .output()
            .expect("the test binary runs again");
        let stdout = String::from_utf8_lossy(&child.stdout);
        assert!(child.status.success(), "{stdout}{}", String::from_utf8_lossy(&child.stderr));
        let line = stdout.lines().find(|line| line.starts_with("options: ")).expect("the child printed its options");
        let output_name = leptos_toml()["output-name"].as_str().expect("a string").to_owned();
        assert_eq!(line, format!("options: output-name={output_name} site-addr=127.0.0.1:3999 hash-files=false"));
    }
}
