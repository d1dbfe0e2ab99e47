//! The CRM: 500 accounts, 2,000 contacts and 1,500 deals. `list_accounts` and `list_deals` page (filtered),
//! `get_account` reads one with its contacts, `deal_report` returns every deal with its notes in one result
//! (about 250 KB).

use serde::Serialize;
use serde_json::{Value, json};

use super::seed::{PEOPLE, Seed};
use super::{optional, page, paged_schema, required};
use crate::mcp_http::ToolServer;

pub const REGIONS: [&str; 4] = ["EMEA", "NA", "LATAM", "APAC"];
pub const INDUSTRIES: [&str; 6] = ["retail", "finance", "health", "logistics", "media", "energy"];
pub const STAGES: [&str; 5] = ["prospect", "qualified", "proposal", "won", "lost"];

#[derive(Debug, Clone, Serialize)]
pub struct Account {
    pub id: String,
    pub name: String,
    pub region: String,
    pub industry: String,
    pub owner: String,
    /// Annual recurring revenue, USD.
    pub arr: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Contact {
    pub id: String,
    pub account_id: String,
    pub name: String,
    pub title: String,
    pub email: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Deal {
    pub id: String,
    pub account_id: String,
    pub stage: String,
    /// USD.
    pub amount: u64,
    pub close_date: String,
    pub owner: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub notes: String,
}

pub struct Crm {
    pub accounts: Vec<Account>,
    pub contacts: Vec<Contact>,
    pub deals: Vec<Deal>,
}

impl Default for Crm {
    fn default() -> Self {
        Self::seeded()
    }
}

impl Crm {
    pub fn seeded() -> Self {
        const FIRST: [&str; 10] = [
            "North", "Blue", "Iron", "Bright", "Silver", "Green", "Rapid", "Cedar", "Polar", "Swift",
        ];
        const SECOND: [&str; 10] = [
            "Harbor", "Peak", "Labs", "Works", "Systems", "Foods", "Energy", "Health", "Media", "Freight",
        ];
        const TITLES: [&str; 5] = ["CTO", "VP Engineering", "Head of Procurement", "CFO", "IT Manager"];
        let mut seed = Seed::new(0x0063_726d);
        let accounts: Vec<Account> = (1..=500)
            .map(|number| Account {
                id: format!("ACC-{number:03}"),
                name: format!("{} {} {number}", seed.pick(&FIRST), seed.pick(&SECOND)),
                region: (*seed.pick(&REGIONS)).to_owned(),
                industry: (*seed.pick(&INDUSTRIES)).to_owned(),
                owner: (*seed.pick(&PEOPLE)).to_owned(),
                arr: u64::try_from(10_000 + seed.below(990_000)).unwrap_or(10_000),
            })
            .collect();
        let contacts = (1..=2000)
            .map(|number| {
                let account = seed.pick(&accounts).id.clone();
                let person = *seed.pick(&PEOPLE);
                Contact {
                    id: format!("CON-{number:04}"),
                    account_id: account,
                    name: person.to_owned(),
                    title: (*seed.pick(&TITLES)).to_owned(),
                    email: format!("{}.{number}@example.com", person.to_lowercase().replace(' ', ".")),
                }
            })
            .collect();
        let deals = (1..=1500)
            .map(|number| Deal {
                id: format!("DEAL-{number:04}"),
                account_id: seed.pick(&accounts).id.clone(),
                stage: (*seed.pick(&STAGES)).to_owned(),
                amount: u64::try_from(1_000 * (5 + seed.below(495))).unwrap_or(5_000),
                close_date: format!("2026-{:02}-{:02}", 1 + seed.below(12), 1 + seed.below(28)),
                owner: (*seed.pick(&PEOPLE)).to_owned(),
                notes: seed.prose_between(15, 15),
            })
            .collect();
        Self {
            accounts,
            contacts,
            deals,
        }
    }
}

impl ToolServer for Crm {
    fn name(&self) -> &str {
        "crm"
    }

    fn tools(&self) -> Vec<Value> {
        vec![
            json!({"name": "list_accounts", "description": "Accounts, paged, filtered by region and industry.",
            "inputSchema": paged_schema(json!({
                "region": {"type": "string", "enum": REGIONS},
                "industry": {"type": "string", "enum": INDUSTRIES},
            }))}),
            json!({"name": "get_account", "description": "One account with its contacts.",
                "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}),
            json!({"name": "list_deals", "description": "Deals without notes, paged, filtered by stage and account.",
            "inputSchema": paged_schema(json!({
                "stage": {"type": "string", "enum": STAGES},
                "account_id": {"type": "string"},
            }))}),
            json!({"name": "deal_report", "description": "Every deal with its notes.",
                "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}}),
        ]
    }

    fn call(&self, tool: &str, arguments: &Value) -> Result<String, String> {
        match tool {
            "list_accounts" => {
                let region = optional(arguments, "region");
                let industry = optional(arguments, "industry");
                let accounts: Vec<&Account> = self
                    .accounts
                    .iter()
                    .filter(|account| region.is_none_or(|region| account.region == region))
                    .filter(|account| industry.is_none_or(|industry| account.industry == industry))
                    .collect();
                page(&accounts, arguments, "accounts")
            }
            "get_account" => {
                let id = required(arguments, "id")?;
                let account = self.accounts.iter().find(|account| account.id == id);
                let account = account.ok_or_else(|| format!("no account {id}"))?;
                let contacts: Vec<&Contact> = self
                    .contacts
                    .iter()
                    .filter(|contact| contact.account_id == id)
                    .collect();
                Ok(json!({"account": account, "contacts": contacts}).to_string())
            }
            "list_deals" => {
                let stage = optional(arguments, "stage");
                let account = optional(arguments, "account_id");
                let deals: Vec<Deal> = self
                    .deals
                    .iter()
                    .filter(|deal| stage.is_none_or(|stage| deal.stage == stage))
                    .filter(|deal| account.is_none_or(|account| deal.account_id == account))
                    .map(|deal| Deal {
                        notes: String::new(),
                        ..deal.clone()
                    })
                    .collect();
                page(&deals, arguments, "deals")
            }
            "deal_report" => Ok(json!({"deals": self.deals}).to_string()),
            other => Err(format!("unknown tool {other}")),
        }
    }
}
