//! (being written)

contract_group!();
