//! The history as lists: the newest deliveries (under a filter), a page of the window's list,
//! where one delivery sits in it, one whole delivery, and a selection for export.

use crate::app::AppError;
use crate::domain::filter::Filter;
use crate::store::{ListRow, Reader, StoredDelivery};

/// Parses filter text, or says what is wrong with it.
pub fn parse_filter(text: &str) -> Result<Filter, AppError> {
    Ok(Filter::parse(text)?)
}

/// The newest `limit` deliveries under a filter (all when `None`), newest first.
pub fn newest(
    reader: &Reader,
    filter: Option<&str>,
    limit: usize,
) -> Result<Vec<StoredDelivery>, AppError> {
    let Some(text) = filter else {
        return Ok(reader.list(limit, None)?);
    };
    let filter = parse_filter(text)?;
    let mut out = Vec::new();
    for row in reader.page_tail(&filter, limit)?.iter().rev() {
        out.extend(reader.get(row.id)?);
    }
    Ok(out)
}

/// A page of the list, oldest first within the page.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The position of the first row.
    pub offset: usize,
    /// How many deliveries match the filter in all.
    pub total: usize,
    /// The rows.
    pub rows: Vec<ListRow>,
}

/// Rows `offset..offset + limit` under a filter; `offset == usize::MAX` asks for the last page,
/// whatever the total is now (walked from the newest end rather than skipped to with OFFSET).
pub fn page(reader: &Reader, filter: &str, offset: usize, limit: usize) -> Result<Page, AppError> {
    let filter = parse_filter(filter)?;
    let total = reader.count_matching(&filter)?.max(0) as usize;
    if offset == usize::MAX {
        let rows = reader.page_tail(&filter, limit)?;
        return Ok(Page {
            offset: total.saturating_sub(rows.len()),
            total,
            rows,
        });
    }
    Ok(Page {
        offset,
        total,
        rows: reader.page(&filter, offset, limit)?,
    })
}

/// Where a delivery sits in the list under a filter; `None` when the filter hides it (or the
/// filter does not parse).
pub fn locate(reader: &Reader, filter: &str, id: i64) -> Option<usize> {
    let filter = Filter::parse(filter).ok()?;
    // The rows before it, and whether it is itself under the filter (the count grows by one
    // past it).
    let before = reader.position_of(&filter, id).ok()?;
    let through = reader.position_of(&filter, id.saturating_add(1)).ok()?;
    (through > before).then_some(before.max(0) as usize)
}

/// One whole delivery, or a sentence saying it is not in the store.
pub fn delivery(reader: &Reader, id: i64) -> Result<StoredDelivery, AppError> {
    reader
        .get(id)?
        .ok_or_else(|| AppError::Usage(format!("no delivery #{id} in the store")))
}

/// Which of `conditions` (forwarding rules' `when`, as written) a stored delivery meets: the
/// same parse and the same SQL as the receiver's rules. A condition that does not parse as a
/// rule's is the reason why.
pub fn test_conditions(
    reader: &Reader,
    id: i64,
    conditions: &[String],
) -> Vec<Result<bool, String>> {
    conditions
        .iter()
        .map(|text| {
            if text.trim().is_empty() {
                return Ok(true);
            }
            let filter = Filter::parse_rule(text).map_err(|e| e.to_string())?;
            match reader.meets(id, std::slice::from_ref(&filter)) {
                Ok(met) => Ok(met.first().copied().unwrap_or(false)),
                Err(e) => Err(e.to_string()),
            }
        })
        .collect()
}

/// Reads ids as the command line takes them: `1,2,7-9` is 1, 2, 7, 8, 9 (each of `texts` is one
/// such list, so `--ids 3 4` and `--ids 3,4` say the same).
pub fn parse_ids(texts: &[String]) -> Result<Vec<i64>, AppError> {
    let text = texts.join(",");
    let text = text.as_str();
    let bad = |part: &str| {
        AppError::Usage(format!(
            "ids {text}: \"{part}\" is not an id or a range; write 1,2,7-9"
        ))
    };
    let mut ids = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((low, high)) => {
                let low: i64 = low.trim().parse().map_err(|_| bad(part))?;
                let high: i64 = high.trim().parse().map_err(|_| bad(part))?;
                if low > high || high - low > 1_000_000 {
                    return Err(bad(part));
                }
                ids.extend(low..=high);
            }
            None => ids.push(part.parse().map_err(|_| bad(part))?),
        }
    }
    Ok(ids)
}

/// The deliveries to export: those under a filter (oldest first), then those named by id. A
/// missing id or an empty selection is a usage error.
pub fn select(
    reader: &Reader,
    filter: Option<&str>,
    ids: &[i64],
) -> Result<Vec<StoredDelivery>, AppError> {
    let mut selected = Vec::new();
    if let Some(text) = filter {
        let filter = parse_filter(text)?;
        for row in reader.page(&filter, 0, 1_000_000)? {
            selected.extend(reader.get(row.id)?);
        }
    }
    for id in ids {
        selected.push(delivery(reader, *id)?);
    }
    if selected.is_empty() {
        return Err(AppError::Usage(
            "nothing to export: no delivery matches".into(),
        ));
    }
    Ok(selected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_as_lists_ranges_or_one_by_one() {
        let ids = |t: &[&str]| parse_ids(&t.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(ids(&["1,2,7-9"]).expect("ids"), vec![1, 2, 7, 8, 9]);
        assert_eq!(ids(&["3", "4"]).expect("ids"), vec![3, 4]);
        assert_eq!(ids(&["3,4", "6-7"]).expect("ids"), vec![3, 4, 6, 7]);
        assert!(ids(&["9-7"]).is_err());
        let refusal = ids(&["1,x"]).expect_err("x").to_string();
        assert!(
            refusal.contains("\"x\" is not an id or a range"),
            "{refusal}"
        );
    }
}
