//! What GitLab reads from an issue's text and time tracking, shared by the views (which
//! print them) and the services (whose system notes quote them): durations in GitLab's units
//! and the Markdown task list of a description.

/// Seconds per unit of GitLab's time tracking: 1mo = 4w, 1w = 5d, 1d = 8h.
pub const MINUTE: i64 = 60;
pub const HOUR: i64 = 60 * MINUTE;
pub const DAY: i64 = 8 * HOUR;
pub const WEEK: i64 = 5 * DAY;
pub const MONTH: i64 = 4 * WEEK;

/// `1mo 2w 3d 4h 5m` (seconds only when under a minute's remainder), or hours and minutes
/// only with `limit_to_hours`; `None` for zero.
pub fn human_duration(seconds: i64, limit_to_hours: bool) -> Option<String> {
    if seconds == 0 {
        return None;
    }
    let sign = if seconds < 0 { "-" } else { "" };
    let mut rest = seconds.abs();
    let units: &[(i64, &str)] = if limit_to_hours {
        &[(HOUR, "h"), (MINUTE, "m"), (1, "s")]
    } else {
        &[
            (MONTH, "mo"),
            (WEEK, "w"),
            (DAY, "d"),
            (HOUR, "h"),
            (MINUTE, "m"),
            (1, "s"),
        ]
    };
    let mut parts = Vec::new();
    for (size, name) in units {
        let count = rest / size;
        rest %= size;
        if count > 0 {
            parts.push(format!("{count}{name}"));
        }
    }
    Some(format!("{sign}{}", parts.join(" ")))
}

/// One Markdown task list item: checked or not, `[~]` (inapplicable), and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskItem {
    pub done: bool,
    pub inapplicable: bool,
    pub text: String,
}

/// The Markdown task list items of a description (`- [ ]`, `* [x]`, `1. [ ]`, `[~]`), in
/// order; not inside fenced code.
pub fn task_items(description: Option<&str>) -> Vec<TaskItem> {
    let mut items = Vec::new();
    let mut fenced = false;
    for line in description.unwrap_or("").lines() {
        let line = line.trim_start();
        if line.starts_with("```") || line.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let rest = if let Some(rest) = line
            .strip_prefix("- ")
            .or_else(|| line.strip_prefix("* "))
            .or_else(|| line.strip_prefix("+ "))
        {
            rest
        } else {
            let digits = line.bytes().take_while(u8::is_ascii_digit).count();
            match line[digits..]
                .strip_prefix(". ")
                .or_else(|| line[digits..].strip_prefix(") "))
            {
                Some(rest) if digits > 0 => rest,
                _ => continue,
            }
        };
        let rest = rest.trim_start();
        let (done, inapplicable) = if rest.starts_with("[x]") || rest.starts_with("[X]") {
            (true, false)
        } else if rest.starts_with("[ ]") {
            (false, false)
        } else if rest.starts_with("[~]") {
            (false, true)
        } else {
            continue;
        };
        if rest.len() > 3 && !rest[3..].starts_with(char::is_whitespace) {
            continue;
        }
        items.push(TaskItem {
            done,
            inapplicable,
            text: rest[3..].trim().to_string(),
        });
    }
    items
}

/// Markdown task list items of a description: `(count, completed)`.
pub fn task_counts(description: Option<&str>) -> (i64, i64) {
    let items = task_items(description);
    let completed = items.iter().filter(|i| i.done).count();
    (items.len() as i64, completed as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_in_gitlab_units() {
        assert_eq!(human_duration(0, false), None);
        assert_eq!(
            human_duration(3 * HOUR + 30 * MINUTE, false).unwrap(),
            "3h 30m"
        );
        let all = MONTH + 2 * WEEK + 3 * DAY + 4 * HOUR + 5 * MINUTE;
        assert_eq!(human_duration(all, false).unwrap(), "1mo 2w 3d 4h 5m");
        assert_eq!(human_duration(DAY + HOUR, true).unwrap(), "9h");
    }

    #[test]
    fn task_lists_are_counted() {
        let text =
            "- [x] one\n- [ ] two\n* [X] three\n1. [ ] four\n- not a task\n```\n- [ ] code\n```";
        assert_eq!(task_counts(Some(text)), (4, 2));
        assert_eq!(task_counts(None), (0, 0));
    }
}
