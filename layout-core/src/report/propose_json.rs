//! The JSON form of `propose --format json`: the layouts before and after
//! ([`LayoutJson`]), what was proven, what it costs, and the optional parts
//! the flags ask for. `docs/json.md` describes every key.

use super::LayoutJson;
use crate::cost::Cost;
use crate::growth::GrowthReport;
use serde::Serialize;

/// `propose --format json`. Keys print sorted; the `Option` fields marked
/// `skip_serializing_if` are absent (not `null`) when the flag that asks
/// for them is not given or they do not apply.
#[derive(Clone, Debug, Serialize)]
pub struct ProposeJson {
    /// The layout as declared.
    pub before: LayoutJson,
    /// The verified proposal.
    pub after: LayoutJson,
    /// `--objective` as given.
    pub objective: String,
    /// Under min-diff, the declared layout already keeps the rule.
    pub nothing_to_do: bool,
    pub optimal: bool,
    /// The goals proven optimal, in the objective's order (`null` when
    /// there is nothing to do).
    pub proven: Option<Vec<&'static str>>,
    /// A proven lower bound on the size of any layout obeying the rule.
    pub lower_bound: u64,
    pub size_proven_minimal: bool,
    /// Every objective term of the proposal (`null` when there is nothing
    /// to do).
    pub cost: Option<Cost>,
    pub churn_bound: u64,
    pub solve_ms: u64,
    /// The time limit stopped a search: the answer may differ with a larger one.
    pub stopped_by_time: bool,
    /// The build-time assertion that pins the phase (with `--offset`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_assertion: Option<String>,
    /// With `--regroup`: the author's groups dissolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dissolved_groups: Option<Vec<String>>,
    /// With `--regroup`: the paddings dissolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dissolved_paddings: Option<Vec<String>>,
    /// With `--regroup`: the line-aligned members whose line breaks were
    /// dissolved (the members stay).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dissolved_line_aligned: Option<Vec<String>>,
    /// The size that also keeps lockless fields off the lines of locked
    /// fields, when that costs more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub separated_locked_size: Option<u64>,
    /// With no objective named and min-diff chosen for the author's
    /// layout: the size and members moved of the size-first (`balanced`)
    /// layout, when it is smaller.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub balanced_size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub balanced_moved: Option<u64>,
    /// The constraints the layout is proven under (the author's structure
    /// kept, the one configuration), each with its price when relaxing it
    /// was solved: `{"kept", "names", "without": {"size", "kept_size",
    /// "proven"}}`.
    pub constraints: Vec<crate::propose::constraints::Constraint>,
    /// With `--check-configs`: the declared layout and the proposal in each
    /// configuration checked (`{"configuration", "declared", "proposed"}`,
    /// each `{"state": "laid", "size", "conflicts"}`, `"absent"` or
    /// `{"state": "failed", "why"}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub configurations: Option<Vec<crate::configs::ConfigCheck>>,
    /// When the header takes the diff: every attribute, padding and marker
    /// it adds or removes (`{"added", "what", "place", "member", "why"}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub markup: Option<Vec<crate::emit::MarkupChange>>,
    /// When the header takes the diff: the unified diff `--format diff`
    /// writes, so that one run gives the numbers and the patch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// With `--changelog`: the commit-message paragraph.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changelog: Option<String>,
    /// With `--growth`: the growth report (as `growth --format json`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub growth: Option<GrowthReport>,
    /// What the reader must know beyond the constraints (a
    /// `__randomize_layout` struct: the proposal holds for builds without
    /// CONFIG_RANDSTRUCT), one sentence each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// With `--safety-scan`: what the tree-safety pass read and found, and
    /// the constraints it added.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree_safety: Option<TreeSafetyJson>,
}

/// The tree-safety pass in `propose --format json`.
#[derive(Clone, Debug, Serialize)]
pub struct TreeSafetyJson {
    /// The files read, their bytes, the spellings, every site.
    #[serde(flatten)]
    pub scan: crate::tree_safety::TreeScan,
    /// The constraints added to the model, each with its sites (they are
    /// also in `constraints`, with their prices).
    pub constraints_added: Vec<crate::tree_safety::TreeConstraint>,
    /// Milliseconds the scan took (wall clock, like `solve_ms`).
    pub scan_ms: u64,
}

impl ProposeJson {
    /// Pretty-printed with sorted keys and a final newline, as the CLI prints it.
    pub fn to_pretty(&self) -> String {
        super::json::pretty(self)
    }
}
