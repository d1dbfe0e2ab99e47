//! The envelopes answers come in: `{"data": …}`, and pages with where the next one starts.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `{"data": …}`, the envelope of most answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Data<T> {
    pub data: T,
}

impl<T> Data<T> {
    pub fn new(data: T) -> Self {
        Self { data }
    }
}

/// A page of a list and where the next one starts: `{"data": [...], "pagination": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Page<T> {
    pub data: Vec<T>,
    pub pagination: Pagination,
}

impl<T> Page<T> {
    pub fn new(data: Vec<T>, pagination: Pagination) -> Self {
        Self { data, pagination }
    }
}

/// Where a page ends: the token of the next page, absent on the last one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = TokenPagination)]
#[non_exhaustive]
pub struct Pagination {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub next_page_token: Option<String>,
    // The reference's schema has it; its server and ours never send it, so our document leaves it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(ignore)]
    pub previous_page_token: Option<String>,
    /// The page size in effect.
    #[schema(minimum = 1)]
    pub limit: u32,
}

impl Pagination {
    /// The pagination of a page of `limit` items, followed by the page `next_page_token` (if any).
    pub fn new(limit: u32, next_page_token: Option<String>) -> Self {
        Self {
            next_page_token,
            previous_page_token: None,
            limit,
        }
    }
}

/// The order of a list, as its `order` query parameter writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum SortOrder {
    Asc,
    Desc,
}

impl SortOrder {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Asc => "asc",
            Self::Desc => "desc",
        }
    }
}
