mod full_store;
mod secrets;
mod session_contract;
mod settings_contract;
mod sqlx_era;
