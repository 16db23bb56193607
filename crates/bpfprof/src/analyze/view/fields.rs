//! The table's columns: counts and sort keys in the order they print, as
//! perf's `-F/--fields` chooses them, and the row order they imply.

use std::fmt;

use super::table::{Row, SortKey};
use crate::analyze::profile::Profile;

/// A column of counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// Share of samples with the row anywhere in the stack (`--children`).
    Children,
    /// Share of samples whose leaf is the row.
    Overhead,
    Samples,
    Period,
}

/// One column: a count, with its width and header, or the sort key at an
/// index of the report's keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    Count {
        count: Count,
        width: usize,
        header: &'static str,
    },
    Key(usize),
}

impl Column {
    fn count(count: Count, fields: bool) -> Column {
        // perf's widths: percentages 8; with -F, samples and period 12.
        let (width, header) = match count {
            Count::Children => (8, "Children"),
            Count::Overhead => (8, "Overhead"),
            Count::Samples if fields => (12, "Samples"),
            Count::Samples => (8, "Samples"),
            Count::Period => (12, "Period"),
        };
        Column::Count {
            count,
            width,
            header,
        }
    }
}

/// The columns of the report without `-F`: children (when shown), the
/// row's own share (`Self` beside children, else `Overhead`), samples,
/// then the sort keys.
pub fn default_columns(keys: usize, children: bool) -> Vec<Column> {
    let mut cols = Vec::new();
    if children {
        cols.push(Column::count(Count::Children, false));
        cols.push(Column::Count {
            count: Count::Overhead,
            width: 8,
            header: "Self",
        });
    } else {
        cols.push(Column::count(Count::Overhead, false));
    }
    cols.push(Column::count(Count::Samples, false));
    cols.extend((0..keys).map(Column::Key));
    cols
}

/// A field of `-F` that is neither a count nor a sort key.
#[derive(Debug)]
pub struct UnknownField(pub String);

impl fmt::Display for UnknownField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown field `{}` in -F: use overhead, overhead_children, sample, period or a sort key (comm, pid, tid, cpu, dso, sym, srcline, bpf_prog)",
            self.0
        )
    }
}

impl std::error::Error for UnknownField {}

/// What `-F` and `--sort` together decide.
#[derive(Debug, Clone, PartialEq)]
pub struct Fields {
    /// The sort keys rows are grouped by.
    pub keys: Vec<SortKey>,
    pub columns: Vec<Column>,
    /// What rows are ordered by, first to last; `None`: the report's
    /// default order (heaviest first).
    pub order: Option<Vec<Column>>,
    /// Whether children are counted.
    pub children: bool,
}

/// perf's rules: `-F` lists the columns in order; its sort keys are the
/// sort keys unless `--sort` is given, and sort keys not in `-F` are
/// appended as columns. Rows are ordered by the sort keys when `--sort`
/// is given (its own first), else by the listed columns left to right. A list starting with `+`
/// adds to the default columns and keeps the default order. Children
/// show when listed (`overhead_children`), or, with `+`, when they would
/// by default.
pub fn resolve(
    fields: &[String],
    sort: Option<&[SortKey]>,
    default_sort: &[SortKey],
    children_default: bool,
) -> Result<Fields, UnknownField> {
    let append = fields.first().is_some_and(|f| f.starts_with('+'));
    let mut counts_and_keys: Vec<Result<Count, SortKey>> = Vec::new();
    for f in fields {
        let name = f.trim_start_matches('+');
        let item = match name {
            "overhead" => Ok(Count::Overhead),
            "overhead_children" | "children" => Ok(Count::Children),
            "sample" | "samples" => Ok(Count::Samples),
            "period" => Ok(Count::Period),
            _ => Err(<SortKey as clap::ValueEnum>::from_str(name, true)
                .map_err(|_| UnknownField(name.to_string()))?),
        };
        counts_and_keys.push(item);
    }
    let field_keys: Vec<SortKey> = counts_and_keys.iter().filter_map(|x| x.err()).collect();
    let mut keys: Vec<SortKey> = match (sort, append || field_keys.is_empty()) {
        (Some(s), _) => s.to_vec(),
        (None, true) => default_sort.to_vec(),
        (None, false) => Vec::new(),
    };
    for k in &field_keys {
        if !keys.contains(k) {
            keys.push(*k);
        }
    }
    let key_col = |k: &SortKey| Column::Key(keys.iter().position(|x| x == k).unwrap_or(0));
    let mut columns = Vec::new();
    let mut children = counts_and_keys.contains(&Ok(Count::Children));
    if append {
        // perf's default columns come first: the shares, then what was
        // added, then the sort keys.
        children |= children_default;
        columns = default_columns(0, children);
        columns.retain(|c| {
            !matches!(
                c,
                Column::Count {
                    count: Count::Samples,
                    ..
                }
            )
        });
    }
    for item in &counts_and_keys {
        columns.push(match item {
            Ok(c) => Column::count(*c, true),
            Err(k) => key_col(k),
        });
    }
    // Sort keys not listed print after the listed columns.
    columns.extend(keys.iter().filter(|k| !field_keys.contains(k)).map(key_col));
    let order = match (append, sort) {
        (true, _) => None,
        // `--sort`'s keys, then those only `-F` names.
        (false, Some(_)) => Some((0..keys.len()).map(Column::Key).collect()),
        (false, None) => Some(
            counts_and_keys
                .iter()
                .map(|item| match item {
                    Ok(c) => Column::count(*c, true),
                    Err(k) => key_col(k),
                })
                .collect(),
        ),
    };
    Ok(Fields {
        keys,
        columns,
        order,
        children,
    })
}

/// Put rows (already in the report's order) in the order of `columns`,
/// as perf sorts by its fields: counts heaviest first, keys by their
/// order, left to right; rows equal in all of them keep their order.
pub fn order_rows(p: &Profile, keys: &[SortKey], columns: &[Column], rows: &mut [Row]) {
    if columns.is_empty() {
        return;
    }
    let all: Vec<_> = rows.iter().map(|r| &r.key).collect();
    let ranks = super::row_order::TieRanks::new(p, keys, &all);
    let value = |r: &Row, c: &Column| -> u64 {
        let heavy = |x: u64| u64::MAX - x;
        match c {
            Column::Key(i) => u64::from(ranks.of(&r.key)[*i]),
            Column::Count { count, .. } => heavy(match count {
                Count::Children => r.children.unwrap_or(r.counts).period,
                Count::Overhead | Count::Period => r.counts.period,
                Count::Samples => r.counts.samples,
            }),
        }
    };
    rows.sort_by_cached_key(|r| columns.iter().map(|c| value(r, c)).collect::<Vec<_>>());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(list: &str, sort: Option<&[SortKey]>) -> Fields {
        let fields: Vec<String> = list.split(',').map(String::from).collect();
        resolve(
            &fields,
            sort,
            &[SortKey::Comm, SortKey::Dso, SortKey::Sym],
            false,
        )
        .unwrap()
    }

    // The layouts below are perf 6.1's for the same options (its headers
    // are quoted).
    #[test]
    fn fields_choose_columns_and_keys_as_perf_does() {
        // "# Overhead  Command"
        let x = f("overhead,comm", None);
        assert_eq!(x.keys, [SortKey::Comm]);
        assert_eq!(x.columns[1], Column::Key(0));
        // "# Overhead       Samples  Shared Object  Command"
        let x = f("overhead,sample", Some(&[SortKey::Dso, SortKey::Comm]));
        assert_eq!(x.keys, [SortKey::Dso, SortKey::Comm]);
        assert_eq!(x.columns.len(), 4);
        assert_eq!(x.columns[2..], [Column::Key(0), Column::Key(1)]);
        // "# Command  Overhead  Shared Object"
        let x = f("comm,overhead", Some(&[SortKey::Dso]));
        assert_eq!(x.keys, [SortKey::Dso, SortKey::Comm]);
        assert_eq!(x.columns[0], Column::Key(1));
        assert_eq!(x.columns[2], Column::Key(0));
        // "# Overhead        Period  Command  Shared Object  Symbol"
        let x = f("+period", None);
        assert_eq!(x.keys, [SortKey::Comm, SortKey::Dso, SortKey::Sym]);
        let heads: Vec<_> = x
            .columns
            .iter()
            .filter_map(|c| match c {
                Column::Count { header, .. } => Some(*header),
                _ => None,
            })
            .collect();
        assert_eq!(heads, ["Overhead", "Period"]);
        assert!(!x.children);
        assert!(f("overhead_children,overhead,sym", None).children);
        assert!(resolve(&["bogus".into()], None, &[], false).is_err());
    }
}
