//! A real Prometheus (built from Go modules by `scripts/build-prometheus.sh`) scraping the
//! operator's `/metrics` on loopback, and its HTTP API's range queries.

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::control_plane::run_build_script;
use crate::support::process::{free_port, spawn_tied};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// How often Prometheus scrapes the operator, and the step of every range query.
pub const SCRAPE_SECONDS: u64 = 2;

/// The running server (killed on drop).
pub struct Prometheus {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One series of a range query: its labels and its (unix seconds, value) samples; a value that
/// is not a number (`NaN` from a quantile without observations) is `None`.
pub struct Series {
    pub labels: serde_json::Map<String, Value>,
    pub samples: Vec<(f64, Option<f64>)>,
}

impl Prometheus {
    /// Builds (or reuses) Prometheus and starts it in `dir`, scraping `target` (`host:port`).
    pub fn start(dir: &Path, target: &str) -> Result<Self, Error> {
        let bin = run_build_script("build-prometheus.sh", &[], &[])?;
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: {SCRAPE_SECONDS}s\n  evaluation_interval: {SCRAPE_SECONDS}s\n\
                 scrape_configs:\n  - job_name: llama-stack-operator\n    static_configs:\n      - targets: [\"{target}\"]\n"
            ),
        )?;
        let port = free_port()?;
        let child = spawn_tied(
            Command::new(bin)
                .arg(format!("--config.file={}", config.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.join("tsdb").display()
                ))
                .arg(format!("--web.listen-address=127.0.0.1:{port}")),
            &dir.join("prometheus.log"),
        )?;
        Ok(Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        })
    }

    /// Waits until Prometheus answers `/-/ready` and has scraped the target once.
    pub async fn wait_scraping(&self, limit: Duration) -> Result<(), Error> {
        let started = Instant::now();
        loop {
            if let Ok(up) = self.instant("up").await
                && up
                    .first()
                    .is_some_and(|s| s.samples.iter().any(|(_, v)| *v == Some(1.0)))
            {
                return Ok(());
            }
            if started.elapsed() > limit {
                return Err(
                    format!("Prometheus did not scrape the operator within {limit:?}").into(),
                );
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    async fn instant(&self, query: &str) -> Result<Vec<Series>, Error> {
        self.api("query", &[("query", query)]).await
    }

    /// `query` evaluated every [`SCRAPE_SECONDS`] from `start` to `end` (unix seconds).
    pub async fn range(&self, query: &str, start: f64, end: f64) -> Result<Vec<Series>, Error> {
        let (start, end, step) = (
            start.to_string(),
            end.to_string(),
            SCRAPE_SECONDS.to_string(),
        );
        self.api(
            "query_range",
            &[
                ("query", query),
                ("start", &start),
                ("end", &end),
                ("step", &step),
            ],
        )
        .await
    }

    async fn api(&self, endpoint: &str, params: &[(&str, &str)]) -> Result<Vec<Series>, Error> {
        let url =
            reqwest::Url::parse_with_params(&format!("{}/api/v1/{endpoint}", self.url), params)?;
        let body: Value = serde_json::from_str(&reqwest::get(url).await?.text().await?)?;
        if body["status"] != "success" {
            return Err(format!("Prometheus refused {params:?}: {}", body["error"]).into());
        }
        let result = body["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        Ok(result.iter().map(series).collect())
    }
}

fn series(item: &Value) -> Series {
    let point = |p: &Value| {
        let t = p[0].as_f64().unwrap_or_default();
        let v = p[1]
            .as_str()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite());
        (t, v)
    };
    let samples = match (item["values"].as_array(), item.get("value")) {
        (Some(values), _) => values.iter().map(point).collect(),
        (None, Some(value)) => vec![point(value)],
        (None, None) => Vec::new(),
    };
    Series {
        labels: item["metric"].as_object().cloned().unwrap_or_default(),
        samples,
    }
}
