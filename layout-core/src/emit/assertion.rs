//! The build-time checks that pin the phases a layout was made for.

use crate::layout::Layout;

/// With known containers, the C lines that fail the build when the struct no
/// longer starts at the phases the layout assumes, one per container, e.g.
/// `static_assert(offsetof(struct mem_cgroup_per_node, lruvec.lrugen) % 64 == 8);`.
///
/// `containers` names the container of each offset of the placement, in
/// order: `mem_cgroup_per_node.lruvec.lrugen` (also accepted: a `struct `
/// prefix, and `:` or `, ` after the container name). An offset without a
/// usable name gets no line (no placeholder to fill in: the caller says
/// how to name it). `None` when no line is written, and in aligned mode,
/// where the layout holds at any placement.
pub fn phase_assertions(containers: &[Option<&str>], l: &Layout) -> Option<String> {
    let line = l.line.max(1);
    let lines: Vec<String> = l
        .placement
        .offsets()
        .iter()
        .zip(containers)
        .filter_map(|(&offset, hint)| {
            let (container, member) = parse_hint((*hint)?)?;
            Some(format!(
                "static_assert(offsetof(struct {container}, {member}) % {line} == {});",
                offset % line
            ))
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// The offsets of the placement that [`phase_assertions`] cannot pin, for
/// lack of a container name.
pub fn unpinned_offsets(containers: &[Option<&str>], l: &Layout) -> Vec<u64> {
    l.placement
        .offsets()
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            containers
                .get(*i)
                .copied()
                .flatten()
                .and_then(parse_hint)
                .is_none()
        })
        .map(|(_, &o)| o)
        .collect()
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
