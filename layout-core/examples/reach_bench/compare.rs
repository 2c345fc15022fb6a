//! `reach_bench --compare A.tsv B.tsv ...`: two or more `--dump` files of
//! the same sets (two builds), each judged against the better reference of
//! them all, per set and band: optima reached, false claims (a size
//! claimed minimal, or a bound, above the best) and the gaps.

use std::collections::BTreeMap;

/// One line of a dump.
struct Row {
    set: String,
    band: String,
    size: u64,
    claimed: bool,
    bound: u64,
    reference: u64,
}

fn load(path: &str) -> Result<BTreeMap<String, Row>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut rows = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let bad = || format!("{path}:{}: not a reach_bench --dump line", n + 1);
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 7 {
            return Err(bad());
        }
        let num = |i: usize| cols[i].parse::<u64>().map_err(|_| bad());
        rows.insert(
            cols[0].to_string(),
            Row {
                set: cols[1].to_string(),
                band: cols[2].to_string(),
                size: num(3)?,
                claimed: cols[4] == "1",
                bound: num(5)?,
                reference: num(6)?,
            },
        );
    }
    Ok(rows)
}

/// What one run scored in one (set, band).
#[derive(Default, Clone)]
struct Score {
    n: usize,
    reached: usize,
    false_claims: usize,
    gaps: BTreeMap<u64, usize>,
}

pub fn run(paths: &[String]) -> Result<(), String> {
    if paths.len() < 2 {
        return Err("--compare takes two or more dump files".into());
    }
    let runs = paths
        .iter()
        .map(|p| load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let ids: Vec<&String> = runs[0]
        .keys()
        .filter(|id| runs.iter().all(|r| r.contains_key(*id)))
        .collect();
    let mut table: BTreeMap<(String, String), Vec<Score>> = BTreeMap::new();
    for id in ids {
        let best = runs
            .iter()
            .map(|r| r[id].reference.min(r[id].size))
            .min()
            .unwrap_or(0);
        let first = &runs[0][id];
        let scores = table
            .entry((first.set.clone(), first.band.clone()))
            .or_insert_with(|| vec![Score::default(); runs.len()]);
        for (k, r) in runs.iter().enumerate() {
            let x = &r[id];
            let s = &mut scores[k];
            s.n += 1;
            let gap = x.size - best.min(x.size);
            if gap == 0 {
                s.reached += 1;
            } else {
                *s.gaps.entry(gap).or_default() += 1;
            }
            if (x.claimed && x.size > best) || x.bound > best {
                s.false_claims += 1;
            }
        }
    }
    let mut head = "| set | members | instances |".to_string();
    let mut rule = "|---|---|---|".to_string();
    for p in paths {
        head.push_str(&format!(" reached ({p}) | false ({p}) | gaps ({p}) |"));
        rule.push_str("---|---|---|");
    }
    println!("{head}\n{rule}");
    let mut totals: Vec<BTreeMap<String, (usize, usize, usize)>> =
        vec![BTreeMap::new(); runs.len()];
    for ((set, band), scores) in &table {
        let mut line = format!("| {set} | {band} | {} |", scores[0].n);
        for (k, s) in scores.iter().enumerate() {
            let gaps: Vec<String> = s.gaps.iter().map(|(g, c)| format!("{g} B: {c}")).collect();
            let gaps = if gaps.is_empty() {
                "—".to_string()
            } else {
                gaps.join(", ")
            };
            line.push_str(&format!(" {} | {} | {gaps} |", s.reached, s.false_claims));
            let t = totals[k].entry(set.clone()).or_default();
            t.0 += s.n;
            t.1 += s.reached;
            t.2 += s.false_claims;
        }
        println!("{line}");
    }
    for (k, p) in paths.iter().enumerate() {
        let sets: Vec<String> = totals[k]
            .iter()
            .map(|(set, (n, reached, false_claims))| {
                format!("{set} {reached} of {n} reached, {false_claims} false")
            })
            .collect();
        println!("{p}: {}", sets.join("; "));
    }
    Ok(())
}
