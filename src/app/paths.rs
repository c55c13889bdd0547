//! Where hookscope keeps its data, which config it reads, and where the receiver listens: the
//! same answers for `hookscope listen`, every other command and the window.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use crate::app::AppError;
use crate::config::{self, ConfigFile};

/// The store's file name inside the data directory.
pub const STORE_FILE: &str = "hookscope.sqlite";
/// The config's file name inside the data directory.
pub const CONFIG_FILE: &str = "config.toml";

/// The data directory and the config file, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// Where the store (and, by default, the config) lives.
    pub data_dir: PathBuf,
    /// The config file.
    pub config_path: PathBuf,
    /// Whether the config file was named explicitly (`--config`): then it must exist.
    pub config_named: bool,
}

/// A config file as loaded, with the warning to show about it (a world-readable file).
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    /// The file's contents (the defaults when it does not exist).
    pub file: ConfigFile,
    /// A sentence to show, when the file's permissions expose its secrets.
    pub warning: Option<String>,
}

impl Paths {
    /// `data_dir` (`--data-dir` or `HOOKSCOPE_DATA_DIR`), else the platform's data dir;
    /// `config` (`--config`), else `config.toml` in the data dir.
    pub fn resolve(data_dir: Option<PathBuf>, config: Option<PathBuf>) -> Result<Paths, AppError> {
        let data_dir = match data_dir {
            Some(dir) => dir,
            None => config::default_data_dir().ok_or_else(|| {
                AppError::Failed(
                    "no home directory found for the default data dir; pass --data-dir".into(),
                )
            })?,
        };
        let config_named = config.is_some();
        let config_path = config.unwrap_or_else(|| data_dir.join(CONFIG_FILE));
        Ok(Paths {
            data_dir,
            config_path,
            config_named,
        })
    }

    /// The store file.
    pub fn store_file(&self) -> PathBuf {
        self.data_dir.join(STORE_FILE)
    }

    /// Reads the config. A missing default file gives the defaults; a missing file named with
    /// `--config` is an error; a file that does not parse says how to get going again.
    pub fn load_config(&self) -> Result<LoadedConfig, AppError> {
        if self.config_named && !self.config_path.exists() {
            return Err(AppError::Failed(format!(
                "the config file {} does not exist",
                self.config_path.display()
            )));
        }
        let file = config::load_file(&self.config_path).map_err(|e| {
            AppError::Failed(format!(
                "{e} (fix it, or move it aside: hookscope then starts with the defaults)"
            ))
        })?;
        Ok(LoadedConfig {
            warning: config::permission_warning(&self.config_path, &file),
            file,
        })
    }
}

/// The address to bind: the flag, else the config's `[receiver] bind`, else loopback.
pub fn bind_address(
    flag: Option<IpAddr>,
    file: &ConfigFile,
    config_path: &Path,
) -> Result<IpAddr, AppError> {
    match (flag, &file.receiver.bind) {
        (Some(ip), _) => Ok(ip),
        (None, Some(text)) => text.parse().map_err(|_| {
            AppError::Failed(format!(
                "[receiver] bind = \"{text}\" in {} is not an IP address",
                config_path.display()
            ))
        }),
        (None, None) => Ok(IpAddr::from([127, 0, 0, 1])),
    }
}

/// The port to listen on: the flag, else the config's `[receiver] port`, else 7878.
pub fn port(flag: Option<u16>, file: &ConfigFile) -> u16 {
    flag.or(file.receiver.port).unwrap_or(config::DEFAULT_PORT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_defaults_to_the_data_dir_and_a_named_one_must_exist() {
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = Paths::resolve(Some(dir.path().into()), None).expect("paths");
        assert_eq!(paths.config_path, dir.path().join(CONFIG_FILE));
        assert_eq!(paths.store_file(), dir.path().join(STORE_FILE));
        assert!(
            paths.load_config().is_ok(),
            "a missing default config is the defaults"
        );
        let named = Paths::resolve(Some(dir.path().into()), Some(dir.path().join("nope.toml")))
            .expect("paths");
        let err = named.load_config().expect_err("a named config must exist");
        assert!(err.to_string().contains("does not exist"), "{err}");
    }

    #[test]
    fn bind_prefers_the_flag_then_the_file_then_loopback() {
        let mut file = ConfigFile::default();
        let path = Path::new("config.toml");
        assert_eq!(
            bind_address(None, &file, path).expect("bind"),
            IpAddr::from([127, 0, 0, 1])
        );
        file.receiver.bind = Some("0.0.0.0".into());
        assert_eq!(
            bind_address(None, &file, path).expect("bind"),
            IpAddr::from([0, 0, 0, 0])
        );
        let flag = IpAddr::from([127, 0, 0, 2]);
        assert_eq!(bind_address(Some(flag), &file, path).expect("bind"), flag);
        file.receiver.bind = Some("nowhere".into());
        assert!(bind_address(None, &file, path).is_err());
        assert_eq!(port(None, &file), config::DEFAULT_PORT);
        assert_eq!(port(Some(0), &file), 0);
    }
}
