//! The standard `process_*` metrics (the names every Prometheus client exports and dashboards and
//! alert templates expect), read from `/proc/self` at scrape time. Parsing is pure; a file that
//! cannot be read leaves its metrics out of that scrape rather than failing it.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// What `/proc/self/stat` says about the process.
#[derive(Debug, PartialEq, Eq)]
struct Stat {
    /// User plus system CPU time, in clock ticks.
    cpu_ticks: u64,
    /// Start time after boot, in clock ticks.
    start_ticks: u64,
    threads: u64,
    virtual_bytes: u64,
    resident_pages: u64,
}

/// Parses `/proc/self/stat` (proc(5)). The command name (field 2) is in parentheses and may hold
/// spaces and parentheses itself, so fields are counted after its last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Field N of proc(5) (1-based) is fields[N - 3]: the first after `)` is field 3, `state`.
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(Stat {
        cpu_ticks: field(14)?.checked_add(field(15)?)?,
        threads: field(20)?,
        start_ticks: field(22)?,
        virtual_bytes: field(23)?,
        resident_pages: field(24)?,
    })
}

/// The boot time in seconds since the epoch, from `/proc/stat`'s `btime` line.
fn parse_boot_time(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// The soft limit of open files, from `/proc/self/limits` (`unlimited` is left out).
fn parse_max_fds(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `sysconf(name)`, when the system answers with a positive value.
fn sysconf(name: libc::c_int) -> Option<u64> {
    // SAFETY: sysconf only reads a configuration value; it touches no memory of ours.
    let value = unsafe { libc::sysconf(name) };
    u64::try_from(value).ok().filter(|v| *v > 0)
}

fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: f64,
) -> Result<(), std::fmt::Error> {
    let metric = ConstGauge::new(value);
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

/// Exports the `process_*` family, unprefixed, as the Prometheus clients of other languages do.
#[derive(Debug)]
pub(crate) struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let ticks = sysconf(libc::_SC_CLK_TCK);
        if let (Some(stat), Some(ticks)) =
            (read("/proc/self/stat").and_then(|s| parse_stat(&s)), ticks)
        {
            let seconds = |t: u64| t as f64 / ticks as f64;
            let cpu = ConstCounter::new(seconds(stat.cpu_ticks));
            cpu.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                None,
                cpu.metric_type(),
            )?)?;
            if let Some(boot) = read("/proc/stat").and_then(|s| parse_boot_time(&s)) {
                gauge(
                    &mut encoder,
                    "process_start_time_seconds",
                    "Start time of the process since unix epoch in seconds",
                    boot as f64 + seconds(stat.start_ticks),
                )?;
            }
            if let Some(page) = sysconf(libc::_SC_PAGESIZE) {
                gauge(
                    &mut encoder,
                    "process_resident_memory_bytes",
                    "Resident memory size in bytes",
                    (stat.resident_pages.saturating_mul(page)) as f64,
                )?;
            }
            gauge(
                &mut encoder,
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                stat.virtual_bytes as f64,
            )?;
            gauge(
                &mut encoder,
                "process_threads",
                "Number of OS threads in the process",
                stat.threads as f64,
            )?;
        }
        if let Ok(entries) = std::fs::read_dir("/proc/self/fd") {
            gauge(
                &mut encoder,
                "process_open_fds",
                "Number of open file descriptors",
                entries.count() as f64,
            )?;
        }
        if let Some(max) = read("/proc/self/limits").and_then(|s| parse_max_fds(&s)) {
            gauge(
                &mut encoder,
                "process_max_fds",
                "Maximum number of open file descriptors",
                max as f64,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name_whatever_it_holds() {
        // A command name with a space and a parenthesis, as proc(5) allows.
        let text = "4242 (tokio (rt) x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 150 25 0 0 20 0 7 0 \
                    98765 123456789 2048 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0";
        assert_eq!(
            parse_stat(text),
            Some(Stat {
                cpu_ticks: 175,
                threads: 7,
                start_ticks: 98765,
                virtual_bytes: 123_456_789,
                resident_pages: 2048,
            })
        );
        assert_eq!(parse_stat("4242 (cut short) S 1"), None);
    }

    #[test]
    fn boot_time_and_open_file_limit_are_read_from_their_lines() {
        assert_eq!(
            parse_boot_time("cpu  1 2 3\nbtime 1764000000\nprocesses 9\n"),
            Some(1_764_000_000)
        );
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max processes             95000                95000                processes \n\
                      Max open files            1048576              1048576              files     \n";
        assert_eq!(parse_max_fds(limits), Some(1_048_576));
        assert_eq!(
            parse_max_fds(
                "Max open files            unlimited            unlimited            files\n"
            ),
            None
        );
    }

    #[test]
    fn this_process_is_described() {
        let mut out = String::new();
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(ProcessCollector));
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        for name in [
            "process_cpu_seconds_total ",
            "process_start_time_seconds ",
            "process_resident_memory_bytes ",
            "process_virtual_memory_bytes ",
            "process_threads ",
            "process_open_fds ",
            "process_max_fds ",
        ] {
            assert!(out.contains(name), "{name} in:\n{out}");
        }
        let resident: f64 = out
            .lines()
            .find_map(|l| l.strip_prefix("process_resident_memory_bytes "))
            .and_then(|v| v.parse().ok())
            .unwrap();
        assert!(
            resident > 1_000_000.0,
            "a test binary holds more than 1 MB: {resident}"
        );
    }
}
