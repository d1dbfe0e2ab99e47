mod full_store;
mod recall_index;
mod secrets;
mod session_contract;
mod settings_contract;
mod sqlx_era;
