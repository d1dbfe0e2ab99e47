//! Schedules and their runs. The two compare-and-sets of dispatch are conditional `UPDATE`s: on Postgres a
//! concurrent one waits for the row lock of the first and then finds its condition false, on SQLite the
//! single writer serialises them; a claim's run rows are inserted in the claim's transaction.

use async_trait::async_trait;
use trueforge_protocol::TenantId;

use super::{SettingsSql, SqlSettingsStore, from_clock, texts};
use crate::error::StoreResult;
use crate::settings::codec::map_write_error;
use crate::settings::schedules::{
    NewScheduleRun, OccurrenceClaim, ScheduleFields, ScheduleRecord, ScheduleRunOutcome, ScheduleRunRecord,
    ScheduleRunStatus, ScheduleRunTrigger, ScheduleState, ScheduleStore, parse_stored,
};
use crate::sql::{Access, Column, Database, FromRow, Param, Sql, SqlRow, params};
use crate::time::Timestamp;

const SCHEDULE_COLUMNS: &str = "id, tenant_id, user_id, name, agent_id, task, cron, timezone, state, next_run_at, \
                                last_run_at, created_at, updated_at";
const RUN_COLUMNS: &str = "id, tenant_id, schedule_id, due_at, status, trigger, session_id, turn_id, error, \
                           missed_occurrences, lease_until, created_at, updated_at";

struct ScheduleRow(ScheduleRecord);

impl FromRow for ScheduleRow {
    fn from_row(row: &impl SqlRow) -> StoreResult<Self> {
        let state: String = Column::column(row, 8)?;
        let next_run_at: Option<i64> = Column::column(row, 9)?;
        let last_run_at: Option<i64> = Column::column(row, 10)?;
        Ok(Self(ScheduleRecord {
            id: Column::column(row, 0)?,
            tenant_id: Column::column(row, 1)?,
            user_id: Column::column(row, 2)?,
            name: Column::column(row, 3)?,
            agent_id: Column::column(row, 4)?,
            task: Column::column(row, 5)?,
            cron: Column::column(row, 6)?,
            timezone: Column::column(row, 7)?,
            state: parse_stored(&state, ScheduleState::from_wire, "schedule state")?,
            next_run_at: next_run_at.map(Timestamp),
            last_run_at: last_run_at.map(Timestamp),
            created_at: Timestamp(Column::column(row, 11)?),
            updated_at: Timestamp(Column::column(row, 12)?),
        }))
    }
}

struct RunRow(ScheduleRunRecord);

impl FromRow for RunRow {
    fn from_row(row: &impl SqlRow) -> StoreResult<Self> {
        let status: String = Column::column(row, 4)?;
        let trigger: String = Column::column(row, 5)?;
        let lease_until: Option<i64> = Column::column(row, 10)?;
        Ok(Self(ScheduleRunRecord {
            id: Column::column(row, 0)?,
            tenant_id: Column::column(row, 1)?,
            schedule_id: Column::column(row, 2)?,
            due_at: Timestamp(Column::column(row, 3)?),
            status: parse_stored(&status, ScheduleRunStatus::from_wire, "schedule run status")?,
            trigger: parse_stored(&trigger, ScheduleRunTrigger::from_wire, "schedule run trigger")?,
            session_id: Column::column(row, 6)?,
            turn_id: Column::column(row, 7)?,
            error: Column::column(row, 8)?,
            missed_occurrences: Column::column(row, 9)?,
            lease_until: lease_until.map(Timestamp),
            created_at: Timestamp(Column::column(row, 11)?),
            updated_at: Timestamp(Column::column(row, 12)?),
        }))
    }
}

/// Inserts runs of an existing schedule and moves its `last_run_at` to the latest of their due times, on
/// the caller's transaction.
async fn insert_runs<C: SettingsSql>(
    conn: &mut C,
    tenant: &str,
    schedule_id: &str,
    runs: Vec<NewScheduleRun>,
) -> StoreResult<Vec<ScheduleRunRecord>> {
    let insert = format!(
        "INSERT INTO schedule_run (tenant_id, id, schedule_id, due_at, status, trigger, missed_occurrences, \
         lease_until, created_at, updated_at) SELECT $1, $2, $3, $4, $5, $6, $7, $8, clock.ms, clock.ms {} \
         RETURNING {RUN_COLUMNS}",
        from_clock::<C>("$9")
    );
    let mut records = Vec::with_capacity(runs.len());
    for run in runs {
        let row: RunRow = conn
            .fetch_one(
                &insert,
                &params![
                    tenant,
                    &run.id,
                    schedule_id,
                    run.due_at.millis(),
                    run.status.as_str(),
                    run.trigger.as_str(),
                    run.missed_occurrences,
                    run.lease_until.map(Timestamp::millis),
                    C::clock_param()
                ],
            )
            .await
            .map_err(|error| map_write_error(error, "schedule run", &run.id))?;
        records.push(row.0);
    }
    if let Some(latest) = records.iter().map(|run| run.due_at).max() {
        conn.execute(
            "UPDATE schedule SET last_run_at = $3 WHERE tenant_id = $1 AND id = $2 \
             AND (last_run_at IS NULL OR last_run_at < $3)",
            &params![tenant, schedule_id, latest.millis()],
        )
        .await?;
    }
    Ok(records)
}

// The bound names a crate-private trait, as every operation of these stores does.
#[allow(private_bounds)]
impl<D> SqlSettingsStore<D>
where
    D: Database,
    D::Conn: SettingsSql,
{
    /// The rows of one read statement.
    async fn read_all<T: FromRow + Send + 'static>(
        &self,
        sql: String,
        params: Vec<Param<'static>>,
    ) -> StoreResult<Vec<T>> {
        self.db
            .run(Access::ReadOne, move |conn| {
                Box::pin(async move { Ok(conn.fetch_all(&sql, &params).await?) })
            })
            .await
    }

    async fn read_schedules(&self, sql: String, params: Vec<Param<'static>>) -> StoreResult<Vec<ScheduleRecord>> {
        let rows: Vec<ScheduleRow> = self.read_all(sql, params).await?;
        Ok(rows.into_iter().map(|row| row.0).collect())
    }

    async fn read_runs(&self, sql: String, params: Vec<Param<'static>>) -> StoreResult<Vec<ScheduleRunRecord>> {
        let rows: Vec<RunRow> = self.read_all(sql, params).await?;
        Ok(rows.into_iter().map(|row| row.0).collect())
    }

    /// One write statement returning at most one run.
    async fn write_run(&self, sql: String, params: Vec<Param<'static>>) -> StoreResult<Option<ScheduleRunRecord>> {
        let row: Option<RunRow> = self
            .db
            .run(Access::WriteOne, move |conn| {
                Box::pin(async move { Ok(conn.fetch_optional(&sql, &params).await?) })
            })
            .await?;
        Ok(row.map(|row| row.0))
    }
}

fn owned(value: &str) -> Param<'static> {
    Param::from(value.to_owned())
}

#[async_trait]
impl<D> ScheduleStore for SqlSettingsStore<D>
where
    D: Database,
    D::Conn: SettingsSql,
{
    async fn create_schedule(
        &self,
        tenant: &TenantId,
        user_id: &str,
        id: &str,
        fields: ScheduleFields,
    ) -> StoreResult<ScheduleRecord> {
        let [tenant, user_id, id] = [tenant.as_str(), user_id, id].map(str::to_owned);
        self.db
            .run(Access::WriteOne, move |conn| {
                Box::pin(async move {
                    let sql = format!(
                        "INSERT INTO schedule (tenant_id, id, user_id, name, agent_id, task, cron, timezone, state, \
                         next_run_at, created_at, updated_at) \
                         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, clock.ms, clock.ms {} \
                         RETURNING {SCHEDULE_COLUMNS}",
                        from_clock::<D::Conn>("$11")
                    );
                    let row: ScheduleRow = conn
                        .fetch_one(
                            &sql,
                            &params![
                                &tenant,
                                &id,
                                &user_id,
                                &fields.name,
                                &fields.agent_id,
                                &fields.task,
                                &fields.cron,
                                &fields.timezone,
                                fields.state.as_str(),
                                fields.next_run_at.map(Timestamp::millis),
                                D::Conn::clock_param()
                            ],
                        )
                        .await
                        .map_err(|error| map_write_error(error, "schedule", &id))?;
                    Ok(row.0)
                })
            })
            .await
    }

    async fn get_schedule(&self, tenant: &TenantId, id: &str) -> StoreResult<Option<ScheduleRecord>> {
        let sql = format!("SELECT {SCHEDULE_COLUMNS} FROM schedule WHERE tenant_id = $1 AND id = $2");
        let row: Option<ScheduleRow> = self.read_row(sql, texts([tenant.as_str(), id])).await?;
        Ok(row.map(|row| row.0))
    }

    async fn list_schedules(
        &self,
        tenant: &TenantId,
        user_id: &str,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<ScheduleRecord>> {
        let sql = format!(
            "SELECT {SCHEDULE_COLUMNS} FROM schedule WHERE tenant_id = $1 AND user_id = $2 \
             AND ($3 IS NULL OR id > $3) ORDER BY id LIMIT $4"
        );
        let params = vec![
            owned(tenant.as_str()),
            owned(user_id),
            Param::from(after.map(str::to_owned)),
            Param::from(i64::from(limit)),
        ];
        self.read_schedules(sql, params).await
    }

    async fn update_schedule(
        &self,
        tenant: &TenantId,
        id: &str,
        fields: ScheduleFields,
    ) -> StoreResult<Option<ScheduleRecord>> {
        let sql = format!(
            "UPDATE schedule SET name = $3, agent_id = $4, task = $5, cron = $6, timezone = $7, state = $8, \
             next_run_at = $9, updated_at = {} WHERE tenant_id = $1 AND id = $2 RETURNING {SCHEDULE_COLUMNS}",
            later_of::<D::Conn>("updated_at", "$10")
        );
        let (tenant, id) = (tenant.as_str().to_owned(), id.to_owned());
        let row: Option<ScheduleRow> = self
            .db
            .run(Access::WriteOne, move |conn| {
                Box::pin(async move {
                    Ok(conn
                        .fetch_optional(
                            &sql,
                            &params![
                                &tenant,
                                &id,
                                &fields.name,
                                &fields.agent_id,
                                &fields.task,
                                &fields.cron,
                                &fields.timezone,
                                fields.state.as_str(),
                                fields.next_run_at.map(Timestamp::millis),
                                D::Conn::clock_param()
                            ],
                        )
                        .await?)
                })
            })
            .await?;
        Ok(row.map(|row| row.0))
    }

    async fn delete_schedule(&self, tenant: &TenantId, id: &str) -> StoreResult<bool> {
        // The runs go with it (ON DELETE CASCADE).
        let sql = "DELETE FROM schedule WHERE tenant_id = $1 AND id = $2";
        Ok(self.write_texts(sql.into(), texts([tenant.as_str(), id])).await? > 0)
    }

    async fn due_schedules(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<ScheduleRecord>> {
        let sql = format!(
            "SELECT {SCHEDULE_COLUMNS} FROM schedule WHERE state = 'active' AND next_run_at <= $1 \
             ORDER BY next_run_at, tenant_id, id LIMIT $2"
        );
        self.read_schedules(sql, vec![Param::from(now.millis()), Param::from(i64::from(limit))])
            .await
    }

    async fn claim_occurrence(&self, claim: OccurrenceClaim) -> StoreResult<Option<Vec<ScheduleRunRecord>>> {
        self.db
            .run(Access::Write, move |conn| {
                Box::pin(async move {
                    let sql = format!(
                        "UPDATE schedule SET next_run_at = $4, updated_at = {} WHERE tenant_id = $1 AND id = $2 \
                         AND state = 'active' AND next_run_at = $3",
                        later_of::<D::Conn>("updated_at", "$5")
                    );
                    let changed = conn
                        .execute(
                            &sql,
                            &params![
                                &claim.tenant_id,
                                &claim.schedule_id,
                                claim.expected_next_run_at.millis(),
                                claim.next_run_at.map(Timestamp::millis),
                                D::Conn::clock_param()
                            ],
                        )
                        .await?;
                    if changed == 0 {
                        return Ok(None);
                    }
                    let runs = insert_runs(conn, &claim.tenant_id, &claim.schedule_id, claim.runs).await?;
                    Ok(Some(runs))
                })
            })
            .await
    }

    async fn add_schedule_run(
        &self,
        tenant: &TenantId,
        schedule_id: &str,
        run: NewScheduleRun,
    ) -> StoreResult<Option<ScheduleRunRecord>> {
        let (tenant, schedule_id) = (tenant.as_str().to_owned(), schedule_id.to_owned());
        self.db
            .run(Access::Write, move |conn| {
                Box::pin(async move {
                    let exists: Option<(String,)> = conn
                        .fetch_optional(
                            &format!(
                                "SELECT id FROM schedule WHERE tenant_id = $1 AND id = $2{}",
                                <D::Conn as SettingsSql>::FOR_UPDATE
                            ),
                            &params![&tenant, &schedule_id],
                        )
                        .await?;
                    if exists.is_none() {
                        return Ok(None);
                    }
                    Ok(insert_runs(conn, &tenant, &schedule_id, vec![run]).await?.pop())
                })
            })
            .await
    }

    async fn finish_schedule_run(
        &self,
        tenant: &TenantId,
        run_id: &str,
        outcome: ScheduleRunOutcome,
    ) -> StoreResult<Option<ScheduleRunRecord>> {
        let (status, session_id, turn_id, error) = match outcome {
            ScheduleRunOutcome::Started { session_id, turn_id } => {
                (ScheduleRunStatus::Started, Some(session_id), Some(turn_id), None)
            }
            ScheduleRunOutcome::Failed { error } => (ScheduleRunStatus::Failed, None, None, Some(error)),
        };
        let sql = format!(
            "UPDATE schedule_run SET status = $3, session_id = $4, turn_id = $5, error = $6, lease_until = NULL, \
             updated_at = {} WHERE tenant_id = $1 AND id = $2 AND status = 'dispatching' RETURNING {RUN_COLUMNS}",
            later_of::<D::Conn>("updated_at", "$7")
        );
        let params = vec![
            owned(tenant.as_str()),
            owned(run_id),
            owned(status.as_str()),
            Param::from(session_id),
            Param::from(turn_id),
            Param::from(error),
            Param::from(D::Conn::clock_param()),
        ];
        self.write_run(sql, params).await
    }

    async fn expired_schedule_runs(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<ScheduleRunRecord>> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM schedule_run WHERE status = 'dispatching' AND lease_until < $1 \
             ORDER BY lease_until, tenant_id, id LIMIT $2"
        );
        self.read_runs(sql, vec![Param::from(now.millis()), Param::from(i64::from(limit))])
            .await
    }

    async fn take_over_schedule_run(
        &self,
        tenant: &TenantId,
        run_id: &str,
        expected_lease_until: Timestamp,
        lease_until: Timestamp,
    ) -> StoreResult<Option<ScheduleRunRecord>> {
        let sql = format!(
            "UPDATE schedule_run SET lease_until = $4, updated_at = {} WHERE tenant_id = $1 AND id = $2 \
             AND status = 'dispatching' AND lease_until = $3 RETURNING {RUN_COLUMNS}",
            later_of::<D::Conn>("updated_at", "$5")
        );
        let params = vec![
            owned(tenant.as_str()),
            owned(run_id),
            Param::from(expected_lease_until.millis()),
            Param::from(lease_until.millis()),
            Param::from(D::Conn::clock_param()),
        ];
        self.write_run(sql, params).await
    }

    async fn get_schedule_run(&self, tenant: &TenantId, run_id: &str) -> StoreResult<Option<ScheduleRunRecord>> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM schedule_run WHERE tenant_id = $1 AND id = $2");
        let row: Option<RunRow> = self.read_row(sql, texts([tenant.as_str(), run_id])).await?;
        Ok(row.map(|row| row.0))
    }

    async fn list_schedule_runs(
        &self,
        tenant: &TenantId,
        schedule_id: &str,
        before: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<ScheduleRunRecord>> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM schedule_run WHERE tenant_id = $1 AND schedule_id = $2 \
             AND ($3 IS NULL OR id < $3) ORDER BY id DESC LIMIT $4"
        );
        let params = vec![
            owned(tenant.as_str()),
            owned(schedule_id),
            Param::from(before.map(str::to_owned)),
            Param::from(i64::from(limit)),
        ];
        self.read_runs(sql, params).await
    }
}

/// The later of `column` and the clock bound at `param`: `updated_at` never moves back (a Postgres
/// replica's statement and a SQLite process clock both read "now" independently of the stored value).
fn later_of<C: SettingsSql>(column: &str, param: &str) -> String {
    let now = C::now_sql(param);
    format!("CASE WHEN {column} > {now} THEN {column} ELSE {now} END")
}
