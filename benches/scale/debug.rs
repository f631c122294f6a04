//! What the bench prints to find where an unexpected write or a lost field came from: always, the
//! writes by kind and the writes of every object written more often than the others of its kind;
//! with `LLSO_SCALE_DEBUG=1`, every write as the audit log recorded it (status writes with their
//! phase and conditions) and the stacks whose status lacks their server's version.

use std::collections::BTreeMap;

use kube::api::ListParams;

use crate::made::Made;
use crate::namespace_writes;
use crate::support::control_plane::ControlPlane;

/// Whether the debug output is asked for.
pub fn enabled() -> bool {
    std::env::var_os("LLSO_SCALE_DEBUG").is_some()
}

/// Prints the operator's writes in the stacks' namespace, from the `from`-th on.
pub fn print_writes(plane: &ControlPlane, from: usize) {
    for w in namespace_writes(plane).iter().skip(from) {
        println!("{}", describe(w));
    }
}

/// One write as a line: when, the verb and the answer's code, what it wrote, and for a status
/// write its phase, the fields it carried and its conditions.
fn describe(w: &serde_json::Value) -> String {
    let status = &w["requestObject"]["status"];
    let conditions: Vec<String> = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{}={}/{}:{}",
                c["type"], c["status"], c["reason"], c["message"]
            )
        })
        .collect();
    // Which parts of the status the write carried (the server's version appearing, say).
    let fields: Vec<&str> = status
        .as_object()
        .into_iter()
        .flat_map(|o| o.keys().map(String::as_str))
        .collect();
    format!(
        "{} {} ({}) {}/{} {} {} [{}] {}",
        w["requestReceivedTimestamp"],
        w["verb"],
        w["responseStatus"]["code"],
        w["objectRef"]["resource"],
        w["objectRef"]["subresource"],
        w["objectRef"]["name"],
        status["phase"],
        fields.join(","),
        conditions.join(" ")
    )
}

/// The kind of a write, for counting: its resource and subresource (`deployments`,
/// `ogxservers/status`).
fn kind(w: &serde_json::Value) -> String {
    let resource = w["objectRef"]["resource"].as_str().unwrap_or_default();
    match w["objectRef"]["subresource"].as_str() {
        Some(sub) if !sub.is_empty() => format!("{resource}/{sub}"),
        _ => resource.to_owned(),
    }
}

/// What a write is about: the object it wrote, or for an Event the object the Event is about.
fn subject(w: &serde_json::Value) -> String {
    let event = &w["requestObject"];
    let about = event["involvedObject"]["name"]
        .as_str()
        .or_else(|| event["regarding"]["name"].as_str());
    match (w["objectRef"]["resource"].as_str(), about) {
        (Some("events"), Some(name)) => name.to_owned(),
        _ => w["objectRef"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    }
}

/// The writes by kind, verb and the answer's code, most first: `create deployments 201: 300, ...`.
pub fn writes_by_kind(writes: &[serde_json::Value]) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for w in writes {
        let verb = w["verb"].as_str().unwrap_or_default();
        let code = &w["responseStatus"]["code"];
        *counts
            .entry(format!("{verb} {} {code}", kind(w)))
            .or_default() += 1;
    }
    crate::most_first(counts, ": ")
}

/// The writes of every object written more often than most of its kind are (a Deployment
/// applied twice where the others were applied once, a third status write), each group whole.
/// Empty when every object of a kind was written as often as the others.
pub fn unusual_writes(writes: &[serde_json::Value]) -> Vec<String> {
    let mut groups: BTreeMap<(String, String), Vec<&serde_json::Value>> = BTreeMap::new();
    for w in writes {
        groups.entry((kind(w), subject(w))).or_default().push(w);
    }
    // How often most objects of each kind were written.
    let mut tallies: BTreeMap<&str, BTreeMap<usize, usize>> = BTreeMap::new();
    for ((kind, _), group) in &groups {
        *tallies
            .entry(kind.as_str())
            .or_default()
            .entry(group.len())
            .or_default() += 1;
    }
    let usual: BTreeMap<&str, usize> = tallies
        .iter()
        .map(|(kind, tally)| {
            let most = tally
                .iter()
                .max_by_key(|(times, objects)| (**objects, std::cmp::Reverse(**times)))
                .map_or(0, |(times, _)| *times);
            (*kind, most)
        })
        .collect();
    let mut lines = Vec::new();
    for ((kind, subject), group) in &groups {
        let expected = usual.get(kind.as_str()).copied().unwrap_or(0);
        if group.len() > expected {
            lines.push(format!(
                "{kind} of {subject}: {} writes where most had {expected}",
                group.len()
            ));
            lines.extend(group.iter().map(|w| format!("  {}", describe(w))));
        }
    }
    lines
}

/// Prints the conditions of every stack whose status lacks its server's version.
pub async fn print_unanswered(client: &kube::Client) {
    let made = Made::from_env();
    let Ok(list) = made.api(client).list(&ListParams::default()).await else {
        return;
    };
    for cr in list.items {
        let status = cr.data.get("status").cloned().unwrap_or_default();
        if made.server_version(&status).is_some() {
            continue;
        }
        let name = cr.metadata.name.unwrap_or_default();
        for c in status["conditions"].as_array().into_iter().flatten() {
            println!(
                "{name}: {} {} {} {}",
                c["type"], c["status"], c["reason"], c["message"]
            );
        }
    }
}
