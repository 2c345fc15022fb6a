//! A patch mail in the shape `git format-patch` writes and `git am` reads:
//! the `From` line, `From:`, `Date:` and `Subject:` headers, the changelog
//! as the body, `Signed-off-by:` when asked, `---`, the diffstat and the
//! diff with `diff --git` headers, the header's path relative to the tree
//! root.

use std::fmt::Write as _;

/// Who the patch is from (git's author identity) and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Author {
    pub name: String,
    pub email: String,
    /// Seconds since the Unix epoch.
    pub time: i64,
    /// The time zone as minutes east of UTC.
    pub tz_minutes: i32,
}

impl Author {
    fn ident(&self) -> String {
        format!("{} <{}>", self.name, self.email)
    }
}

/// What the mail says and carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mail<'a> {
    pub author: &'a Author,
    /// `subsys: reorder struct X for ...`, without `[PATCH]`.
    pub subject: &'a str,
    /// The commit message body (the changelog).
    pub body: &'a str,
    /// Add `Signed-off-by:` with the author's identity.
    pub signoff: bool,
    /// The header's path relative to the tree root.
    pub path: &'a str,
    /// A unified diff of that one file (`--- a/...`, `+++ b/...`, hunks);
    /// its path lines are rewritten to `path`.
    pub diff: &'a str,
}

/// The mail as `git format-patch` writes one patch.
pub fn patch_mail(m: &Mail) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001"
    );
    let _ = writeln!(out, "From: {}", m.author.ident());
    let _ = writeln!(out, "Date: {}", rfc2822(m.author.time, m.author.tz_minutes));
    let _ = writeln!(out, "Subject: [PATCH] {}", m.subject);
    out.push('\n');
    let body = m.body.trim_end();
    // A line that is only `---` would end the message for git am.
    for line in body.lines() {
        if line.trim_end() == "---" {
            out.push_str("--\n");
        } else {
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    if m.signoff {
        let _ = writeln!(out, "\nSigned-off-by: {}", m.author.ident());
    }
    out.push_str("---\n");
    let hunks = hunks_of(m.diff);
    out.push_str(&diffstat(m.path, &hunks));
    out.push('\n');
    let _ = writeln!(out, "diff --git a/{0} b/{0}", m.path);
    let _ = writeln!(out, "--- a/{}", m.path);
    let _ = writeln!(out, "+++ b/{}", m.path);
    out.push_str(&hunks);
    out.push_str("-- \ncachelayout\n\n");
    out
}

/// The hunks of a one-file unified diff: everything from the first `@@`.
fn hunks_of(diff: &str) -> String {
    let mut out = String::new();
    let mut in_hunks = false;
    for line in diff.split_inclusive('\n') {
        in_hunks |= line.starts_with("@@");
        if in_hunks {
            out.push_str(line);
        }
    }
    out
}

/// `git diff --stat` of one file: ` PATH | N ++--` and the summary line.
fn diffstat(path: &str, hunks: &str) -> String {
    let (mut added, mut removed) = (0usize, 0usize);
    for line in hunks.lines() {
        if line.starts_with('+') {
            added += 1;
        } else if line.starts_with('-') {
            removed += 1;
        }
    }
    let total = added + removed;
    // git scales the bar to fit 80 columns.
    let room = 80usize
        .saturating_sub(path.len() + total.to_string().len() + 6)
        .max(10);
    let (plus, minus) = if total <= room {
        (added, removed)
    } else {
        let plus = (added * room).div_ceil(total);
        (plus, room - plus.min(room))
    };
    let s = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut out = format!(
        " {path} | {total} {}{}\n 1 file changed",
        "+".repeat(plus),
        "-".repeat(minus)
    );
    if added > 0 {
        let _ = write!(out, ", {}", s(added, "insertion(+)", "insertions(+)"));
    }
    if removed > 0 {
        let _ = write!(out, ", {}", s(removed, "deletion(-)", "deletions(-)"));
    }
    out.push('\n');
    out
}

/// `Tue, 1 Dec 2026 16:56:26 +0000`.
pub fn rfc2822(time: i64, tz_minutes: i32) -> String {
    let local = time + i64::from(tz_minutes) * 60;
    let days = local.div_euclid(86_400);
    let secs = local.rem_euclid(86_400);
    let (y, mo, d) = civil_from_days(days);
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let sign = if tz_minutes < 0 { '-' } else { '+' };
    let tz = tz_minutes.unsigned_abs();
    format!(
        "{}, {d} {} {y} {:02}:{:02}:{:02} {sign}{:02}{:02}",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(mo - 1) as usize],
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        tz / 60,
        tz % 60
    )
}

/// (year, month 1-12, day 1-31) of a day count since 1970-01-01
/// (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The subsystem prefix of a subject for a header at `path` (relative to
/// the tree root): `net` for networking headers, `tcp` for `tcp.h`, `mm`
/// for memory management, else the file's stem.
pub fn subsystem(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.strip_suffix(".h").unwrap_or(file);
    let net = ["netdevice", "skbuff", "netfilter", "socket", "net"];
    let mm = [
        "mmzone",
        "mm_types",
        "mm",
        "memcontrol",
        "page_counter",
        "swap",
        "mmu_notifier",
    ];
    if path.starts_with("include/net/") || net.contains(&stem) {
        "net".into()
    } else if mm.contains(&stem) || path.starts_with("mm/") {
        "mm".into()
    } else {
        stem.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_as_git_writes_them() {
        assert_eq!(rfc2822(0, 0), "Thu, 1 Jan 1970 00:00:00 +0000");
        assert_eq!(rfc2822(1_796_144_186, 0), "Tue, 1 Dec 2026 16:56:26 +0000");
        assert_eq!(
            rfc2822(1_796_144_186, -90),
            "Tue, 1 Dec 2026 15:26:26 -0130"
        );
    }

    #[test]
    fn subsystems_of_kernel_headers() {
        assert_eq!(subsystem("include/linux/tcp.h"), "tcp");
        assert_eq!(subsystem("include/linux/netdevice.h"), "net");
        assert_eq!(subsystem("include/net/netns/ipv4.h"), "net");
        assert_eq!(subsystem("include/linux/mmzone.h"), "mm");
        assert_eq!(subsystem("queue.h"), "queue");
    }

    #[test]
    fn a_mail_git_am_reads() {
        let author = Author {
            name: "A U Thor".into(),
            email: "a@example.org".into(),
            time: 0,
            tz_minutes: 0,
        };
        let diff = "--- a//abs/x.h\n+++ b//abs/x.h\n@@ -1,2 +1,2 @@\n-int a;\n int b;\n+int a;\n";
        let mail = patch_mail(&Mail {
            author: &author,
            subject: "x: reorder struct s for fewer lines",
            body: "Why.\n---\nmore\n",
            signoff: true,
            path: "include/x.h",
            diff,
        });
        assert!(mail.starts_with("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\nFrom: A U Thor <a@example.org>\nDate: Thu, 1 Jan 1970 00:00:00 +0000\nSubject: [PATCH] x: reorder struct s for fewer lines\n\nWhy.\n--\nmore\n\nSigned-off-by: A U Thor <a@example.org>\n---\n include/x.h | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\ndiff --git a/include/x.h b/include/x.h\n--- a/include/x.h\n+++ b/include/x.h\n@@ -1,2 +1,2 @@\n"), "{mail}");
        assert!(!mail.contains("//abs"));
    }
}
