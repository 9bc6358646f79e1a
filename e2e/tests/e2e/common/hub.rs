//! The hub for the hub tests: a `windlass hub` process against the local control plane (as the
//! admin, or as another identity through a kubeconfig that impersonates it), curl against it,
//! and Debian's chromium driven over WebDriver.

use std::{
    io::{BufRead, BufReader},
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use windlass_testkit::{kubeconfig_path, state_dir, windlass_binary};

/// A running `windlass hub`, stopped when dropped.
pub struct HubProcess {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    /// The launch token (`--auth kubeconfig`); empty in token mode.
    pub token: String,
    child: Child,
}

impl HubProcess {
    /// `windlass hub` acting with `kubeconfig`, on a free port, with a known launch token.
    pub fn kubeconfig(kubeconfig: &Path) -> HubProcess {
        let token = windlass_testkit::unique_name("hubtoken").replace('-', "");
        HubProcess::start(
            &[
                "hub",
                "--kubeconfig",
                &kubeconfig.display().to_string(),
                "--listen",
                "127.0.0.1:0",
            ],
            &token,
        )
    }

    /// `windlass hub --auth token`: people present their own Kubernetes tokens; the admin
    /// kubeconfig only reviews them.
    pub fn token_mode() -> HubProcess {
        HubProcess::start(
            &[
                "hub",
                "--auth",
                "token",
                "--kubeconfig",
                &kubeconfig_path().display().to_string(),
                "--listen",
                "127.0.0.1:0",
            ],
            "",
        )
    }

    fn start(args: &[&str], token: &str) -> HubProcess {
        let log = std::fs::File::create(state_dir().join(format!(
            "logs/hub-{}.log",
            windlass_testkit::unique_name("t")
        )))
        .expect("creating the hub's log");
        let mut command = Command::new(windlass_binary());
        command.args(args).stdout(Stdio::piped()).stderr(log);
        if !token.is_empty() {
            command.env("WINDLASS_HUB_TOKEN", token);
        }
        let mut child = command.spawn().expect("starting windlass hub");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("reading the hub's first line");
        // "windlass hub: open http://127.0.0.1:PORT/login?token=..." or "listening on ADDR; ..."
        let addr = first
            .split_whitespace()
            .find_map(|word| {
                let word = word.trim_end_matches(';');
                let rest = word.strip_prefix("http://").unwrap_or(word);
                rest.starts_with("127.0.0.1:")
                    .then(|| rest.split('/').next().unwrap_or(rest).to_string())
            })
            .unwrap_or_else(|| panic!("the hub printed no address: {first:?}"));
        HubProcess {
            url: format!("http://{addr}"),
            token: token.to_string(),
            child,
        }
    }

    /// The sign-in link `windlass hub` prints.
    pub fn login_url(&self) -> String {
        format!("{}/login?token={}", self.url, self.token)
    }
}

impl Drop for HubProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A kubeconfig like the admin's that impersonates `user` (in `system:authenticated`): the API
/// server authorizes everything it does as that user.
pub fn impersonating_kubeconfig(user: &str, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(kubeconfig_path()).expect("reading the admin kubeconfig");
    let mut config: Value = serde_saphyr::from_str(&text).expect("the admin kubeconfig parses");
    for entry in config["users"].as_array_mut().expect("kubeconfig users") {
        entry["user"]["as"] = json!(user);
        entry["user"]["as-groups"] = json!(["system:authenticated"]);
    }
    let path = dir.join(format!("{user}.kubeconfig"));
    std::fs::write(&path, serde_json::to_string(&config).unwrap()).expect("writing kubeconfig");
    path
}

/// Runs curl with `args`; returns (status, headers, body). Fails the test when curl fails.
pub fn curl(args: &[&str]) -> (u16, String, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let headers_file = dir.path().join("headers");
    let output = Command::new("curl")
        .args([
            "-sS",
            "-D",
            &headers_file.display().to_string(),
            "-w",
            "\n%{http_code}",
        ])
        .args(args)
        .output()
        .expect("running curl");
    assert!(
        output.status.success(),
        "curl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut body = output.stdout;
    let newline = body.iter().rposition(|b| *b == b'\n').unwrap();
    let status = String::from_utf8_lossy(&body[newline + 1..])
        .trim()
        .parse()
        .unwrap();
    body.truncate(newline);
    let headers = std::fs::read_to_string(headers_file).unwrap_or_default();
    (status, headers, body)
}

/// The value of header `name` in curl's dump of the last response.
pub fn header<'a>(headers: &'a str, name: &str) -> Option<&'a str> {
    headers
        .split("\r\n\r\n")
        .filter(|block| !block.trim().is_empty())
        .last()?
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
}

/// chromedriver and a headless chromium, with a profile of their own.
pub struct Browser {
    pub client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Browser {
    pub async fn start() -> Browser {
        let driver_bin = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .unwrap_or_else(|| {
                panic!(
                    "chromedriver is missing: `e2e/scripts/prerequisites.sh test` installs Debian's chromium and chromium-driver"
                )
            });
        let port = free_port();
        let log = std::fs::File::create(state_dir().join(format!("logs/chromedriver-{port}.log")))
            .expect("creating chromedriver's log");
        let driver = Command::new(driver_bin)
            .arg(format!("--port={port}"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("starting chromedriver");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "chromedriver did not listen on {port}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = tempfile::tempdir().expect("a browser profile folder");
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": "/usr/bin/chromium",
                "args": [
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--disable-dev-shm-usage",
                    "--window-size=1280,1000",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("starting a chromium session");
        Browser {
            client,
            driver,
            _profile: profile,
        }
    }

    /// Ends the session (closing chromium) and stops chromedriver.
    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }

    /// The text of the first element matching `css`, once there is one.
    pub async fn text(&self, css: &str) -> String {
        self.client
            .wait()
            .at_most(Duration::from_secs(30))
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css}: {e}"))
            .text()
            .await
            .unwrap_or_default()
    }

    /// Waits until the text of the first element matching `css` satisfies `ok`; the page may
    /// replace the element meanwhile (the installed view refreshes), so it is looked up anew
    /// each time.
    pub async fn wait_text(
        &self,
        css: &str,
        what: &str,
        timeout: Duration,
        ok: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + timeout;
        let mut last = String::new();
        loop {
            if let Ok(element) = self.client.find(Locator::Css(css)).await
                && let Ok(text) = element.text().await
            {
                if ok(&text) {
                    return text;
                }
                last = text;
            }
            if Instant::now() > deadline {
                let page = self.client.source().await.unwrap_or_default();
                panic!(
                    "timed out after {timeout:?} waiting for {what} in {css}; last text {last:?}\npage:\n{page}\nmanager log:\n{}",
                    windlass_testkit::manager_log_tail(30)
                );
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// Clicks the first element matching `css`, retrying while the page replaces it.
    pub async fn click(&self, css: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            match self.client.find(Locator::Css(css)).await {
                Ok(element) => match element.click().await {
                    Ok(()) => return,
                    Err(e) if Instant::now() > deadline => panic!("clicking {css}: {e}"),
                    Err(_) => {}
                },
                Err(e) if Instant::now() > deadline => {
                    let page = self.client.source().await.unwrap_or_default();
                    panic!("no {css} to click after {timeout:?}: {e}\npage:\n{page}")
                }
                Err(_) => {}
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// Replaces the value of the input matching `css`.
    pub async fn fill(&self, css: &str, value: &str) {
        let input = self
            .client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no input {css}: {e}"));
        input.clear().await.unwrap();
        input.send_keys(value).await.unwrap();
    }

    /// A script's result, run by the driver (not subject to the page's CSP).
    pub async fn eval(&self, script: &str) -> Value {
        self.client
            .execute(script, Vec::new())
            .await
            .unwrap_or_else(|e| panic!("running {script:?}: {e}"))
    }

    /// Saves a screenshot of the page where the README shows it.
    pub async fn screenshot(&self, name: &str) {
        let png = self.client.screenshot().await.expect("a screenshot");
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../crates/hub/screenshots")
            .join(format!("{name}.png"));
        std::fs::create_dir_all(path.parent().unwrap()).expect("the screenshots folder");
        std::fs::write(&path, png).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // After a panic the session was not closed: chromedriver's end takes chromium with it.
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
