//! What the process keeps between reconciles: what the watches saw of the owned objects
//! (owned_index, listing), the stacks' cache slimmed (slim_cache, field_digest), who refers to
//! which Secret or ConfigMap (referrers), the namespaces' `default` ServiceAccounts' pull secrets
//! (default_accounts), which stacks have server Pods (server_pods), the Secrets and ConfigMaps read by name, once per change (read_once),
//! which OGXServers hold nothing taken from another stack (handed_back), which stacks each
//! OGXServer's annotations named last (named_before),
//! which optional APIs the cluster serves (discovery), each stack's last prune (prune_marks), the
//! last two forgetting objects no longer reconciled (recently_seen), the servers' own answers,
//! read at a rate and masked (server_info, secret_mask), the status writes of the last seconds
//! (recent_writes) and the Event series (event_series).

pub(in crate::controller) mod default_accounts;
pub mod discovery;
pub(in crate::controller) mod event_series;
pub(in crate::controller) mod field_digest;
pub(in crate::controller) mod handed_back;
pub(in crate::controller) mod listing;
pub(in crate::controller) mod named_before;
pub(in crate::controller) mod owned_index;
pub(in crate::controller) mod prune_marks;
pub(in crate::controller) mod read_once;
pub(in crate::controller) mod recent_writes;
pub(in crate::controller) mod recently_seen;
pub(in crate::controller) mod referrers;
pub(in crate::controller) mod secret_mask;
pub(in crate::controller) mod server_info;
pub(in crate::controller) mod server_pods;
pub mod slim_cache;
