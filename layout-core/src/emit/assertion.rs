//! The build-time check that pins the phase a layout was made for.

use crate::layout::Layout;
use crate::model::Placement;

/// In `Offset` mode, the C line that fails the build when the struct no
/// longer starts at the phase the layout assumes, e.g.
/// `static_assert(offsetof(struct mem_cgroup_per_node, lruvec.lrugen) % 64 == 48);`.
///
/// `container_hint` names the container and the path to the struct inside
/// it: `mem_cgroup_per_node.lruvec.lrugen` (also accepted: a `struct ` prefix,
/// and `:` or `, ` after the container name). Without a usable hint the result
/// is a comment that explains the check for the user to fill in. `None` in
/// aligned mode, where the layout holds at any placement.
pub fn phase_assertion(
    struct_name: &str,
    container_hint: Option<&str>,
    l: &Layout,
) -> Option<String> {
    let Placement::Offset(offset) = l.placement else {
        return None;
    };
    let line = l.line.max(1);
    let phase = offset % line;
    Some(match container_hint.and_then(parse_hint) {
        Some((container, member)) => format!(
            "static_assert(offsetof(struct {container}, {member}) % {line} == {phase});"
        ),
        None => format!(
            "/* struct {struct_name} is laid out for offset {offset} of a cacheline-aligned \
             container: pin it with static_assert(offsetof(CONTAINER, MEMBER) % {line} == {phase}); \
             where MEMBER is the path to the struct {struct_name} inside CONTAINER */"
        ),
    })
}

/// `struct a.b.c` / `a:b.c` / `a, b.c` → (`a`, `b.c`).
fn parse_hint(hint: &str) -> Option<(String, String)> {
    let hint = hint.trim();
    let hint = hint.strip_prefix("struct ").unwrap_or(hint).trim_start();
    let split = hint.find([':', ',', '.'])?;
    let container = hint[..split].trim();
    let member = hint[split + 1..].trim();
    let is_ident = |t: &str| {
        t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let member_ok = !member.is_empty()
        && member.split('.').all(|part| {
            // A path step may index an array: `lruvec[1].lrugen`.
            let name = part.split('[').next().unwrap_or("");
            is_ident(name)
                && part[name.len()..]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "[]_".contains(c))
        });
    (is_ident(container) && member_ok).then(|| (container.to_string(), member.to_string()))
}

#[cfg(test)]
mod tests {
    use super::parse_hint;

    #[test]
    fn hints() {
        let want = Some(("mem_cgroup_per_node".into(), "lruvec.lrugen".into()));
        assert_eq!(parse_hint("mem_cgroup_per_node.lruvec.lrugen"), want);
        assert_eq!(
            parse_hint("struct mem_cgroup_per_node, lruvec.lrugen"),
            want
        );
        assert_eq!(parse_hint("mem_cgroup_per_node:lruvec.lrugen"), want);
        assert_eq!(parse_hint("mem_cgroup_per_node"), None);
        assert_eq!(parse_hint("a.b); system(x"), None);
    }
}
