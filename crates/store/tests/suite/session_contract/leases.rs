//! Leases: ownership of a running turn by one executor, renewal, atomic takeover after expiry, the
//! recovery sweeper's listing, and the end of a lease with the turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use trueforge_store::session::{Lease, LeaseRequest, NewTurn, TurnKey};
use trueforge_store::{StoreError, Timestamp};

use super::fixtures::*;

const LONG_TTL: i64 = 60_000;
/// Short enough to lapse during [`lapse`].
const TINY_TTL: i64 = 5;

fn leased(mut new_turn: NewTurn, owner: &str, ttl_ms: i64) -> NewTurn {
    new_turn.lease = Some(LeaseRequest {
        owner: owner.into(),
        ttl_ms,
    });
    new_turn
}

async fn lease_of(store: &Store, turn_key: &TurnKey) -> Option<Lease> {
    store
        .get_turn(turn_key)
        .await
        .expect("get turn")
        .expect("turn exists")
        .turn
        .lease
}

/// Waits well past [`TINY_TTL`].
async fn lapse() {
    tokio::time::sleep(Duration::from_millis(30)).await;
}

/// A running turn of `t1/s1` leased by `owner`.
async fn leased_turn(store: &Store, turn_id: &str, owner: &str, ttl_ms: i64) -> TurnKey {
    store
        .create_turn(leased(turn(turn_id, None), owner, ttl_ms))
        .await
        .expect("create leased turn");
    key(turn_id)
}

pub async fn leases_create_turn_records_the_lease(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let created = store
        .create_turn(leased(turn("turn-1", None), "executor-a", LONG_TTL))
        .await
        .unwrap();
    let lease = created.lease.clone().expect("the created summary carries the lease");
    assert_eq!(lease.owner, "executor-a");
    assert!(
        lease.expires_at >= created.created_at.plus_millis(LONG_TTL),
        "{lease:?} vs {:?}",
        created.created_at
    );
    assert!(lease.expires_at <= Timestamp::now().plus_millis(LONG_TTL + 5_000));
    assert_eq!(
        lease_of(&store, &key("turn-1")).await,
        Some(lease.clone()),
        "get_turn shows the same lease"
    );
    let listed = store
        .list_turns(
            &TENANT.into(),
            &SESSION.into(),
            &trueforge_store::session::PageRequest::first(10),
        )
        .await
        .unwrap();
    assert_eq!(listed.data[0].lease, Some(lease));

    // Without a request there is no lease.
    finish(&store, &key("turn-1")).await;
    store.create_turn(turn("turn-2", Some("turn-1"))).await.unwrap();
    assert_eq!(lease_of(&store, &key("turn-2")).await, None);
}

pub async fn leases_renew_by_owner_extends(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = leased_turn(&store, "turn-1", "executor-a", 1_000).await;
    let before = lease_of(&store, &turn_key).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let renewed = store.renew_lease(&turn_key, "executor-a", LONG_TTL).await.unwrap();
    assert_eq!(renewed.owner, "executor-a");
    assert!(renewed.expires_at > before.expires_at, "{renewed:?} extends {before:?}");
    assert!(renewed.expires_at >= before.expires_at.plus_millis(LONG_TTL - 1_000));
    assert_eq!(lease_of(&store, &turn_key).await, Some(renewed));
}

pub async fn leases_renew_by_other_owner_is_rejected(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = leased_turn(&store, "turn-1", "executor-a", LONG_TTL).await;
    let before = lease_of(&store, &turn_key).await;
    let error = store.renew_lease(&turn_key, "executor-b", LONG_TTL).await.unwrap_err();
    assert!(
        matches!(&error, StoreError::LeaseHeldByOther { owner: Some(owner), .. } if owner == "executor-a"),
        "{error:?}"
    );
    assert_eq!(
        lease_of(&store, &turn_key).await,
        before,
        "a rejected renewal changes nothing"
    );

    // A turn without a lease is held by nobody: renewing it is not a takeover.
    finish(&store, &turn_key).await;
    store.create_turn(turn("turn-2", Some("turn-1"))).await.unwrap();
    let error = store
        .renew_lease(&key("turn-2"), "executor-b", LONG_TTL)
        .await
        .unwrap_err();
    assert!(
        matches!(error, StoreError::LeaseHeldByOther { owner: None, .. }),
        "{error:?}"
    );
    assert_eq!(lease_of(&store, &key("turn-2")).await, None);
}

pub async fn leases_claim_of_live_lease_is_rejected(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = leased_turn(&store, "turn-1", "executor-a", LONG_TTL).await;
    let before = lease_of(&store, &turn_key).await;
    for claimer in ["executor-b", "executor-a"] {
        let error = store
            .claim_expired_lease(&turn_key, claimer, LONG_TTL)
            .await
            .unwrap_err();
        assert!(
            matches!(&error, StoreError::LeaseHeldByOther { owner: Some(owner), .. } if owner == "executor-a"),
            "{claimer}: {error:?}"
        );
    }
    assert_eq!(lease_of(&store, &turn_key).await, before);
}

pub async fn leases_claim_after_expiry_changes_owner(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = leased_turn(&store, "turn-1", "executor-a", TINY_TTL).await;
    lapse().await;
    let claimed = store
        .claim_expired_lease(&turn_key, "executor-b", LONG_TTL)
        .await
        .unwrap();
    assert_eq!(claimed.owner, "executor-b");
    assert!(claimed.expires_at > Timestamp::now().plus_millis(LONG_TTL - 5_000));
    assert_eq!(lease_of(&store, &turn_key).await, Some(claimed));

    // The new owner holds it now: the old one can neither renew nor reclaim it.
    let error = store.renew_lease(&turn_key, "executor-a", LONG_TTL).await.unwrap_err();
    assert!(
        matches!(&error, StoreError::LeaseHeldByOther { owner: Some(owner), .. } if owner == "executor-b"),
        "{error:?}"
    );
    let error = store
        .claim_expired_lease(&turn_key, "executor-a", LONG_TTL)
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::LeaseHeldByOther { .. }), "{error:?}");
    store.renew_lease(&turn_key, "executor-b", LONG_TTL).await.unwrap();
}

pub async fn leases_claim_of_unleased_running_turn_succeeds(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    store.create_turn(turn("turn-1", None)).await.unwrap();
    let claimed = store
        .claim_expired_lease(&key("turn-1"), "executor-a", LONG_TTL)
        .await
        .unwrap();
    assert_eq!(claimed.owner, "executor-a");
    assert_eq!(lease_of(&store, &key("turn-1")).await, Some(claimed));
    let error = store
        .claim_expired_lease(&key("turn-1"), "executor-b", LONG_TTL)
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::LeaseHeldByOther { .. }), "{error:?}");
}

pub async fn leases_list_expired_spans_tenants_and_skips_live_and_terminal(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    seed_session(&store, "t2", "s2").await;
    seed_session(&store, "t3", "s3").await;
    // Expires first: t2's turn; then t1's; t3's is live; t1's second session has a terminal one.
    store
        .create_turn(leased(turn_in("t2", "s2", "turn-a", None), "executor-2", TINY_TTL))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(3)).await;
    store
        .create_turn(leased(turn("turn-b", None), "executor-1", TINY_TTL))
        .await
        .unwrap();
    store
        .create_turn(leased(turn_in("t3", "s3", "turn-live", None), "executor-3", LONG_TTL))
        .await
        .unwrap();
    seed_session(&store, TENANT, "s1-done").await;
    let done_key = key_in(TENANT, "s1-done", "turn-done");
    store
        .create_turn(leased(
            turn_in(TENANT, "s1-done", "turn-done", None),
            "executor-4",
            TINY_TTL,
        ))
        .await
        .unwrap();
    finish(&store, &done_key).await;
    store.create_turn(turn_in("t3", "s3", "unleased", None)).await.unwrap();
    lapse().await;

    let expired = store.list_expired_leases(100).await.unwrap();
    let found: Vec<(&str, &str, &str, &str)> = expired
        .iter()
        .map(|lease| {
            (
                lease.tenant_id.as_str(),
                lease.session_id.as_str(),
                lease.turn_id.as_str(),
                lease.owner.as_str(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("t2", "s2", "turn-a", "executor-2"),
            (TENANT, SESSION, "turn-b", "executor-1")
        ]
    );
    assert!(expired[0].expired_at <= expired[1].expired_at, "oldest expiry first");
    assert!(expired.iter().all(|lease| lease.expired_at < Timestamp::now()));
    let limited = store.list_expired_leases(1).await.unwrap();
    assert_eq!(limited, expired[..1].to_vec(), "at most limit");

    // A claim takes it off the list; so does the end of the turn.
    store
        .claim_expired_lease(&key_in("t2", "s2", "turn-a"), "executor-9", LONG_TTL)
        .await
        .unwrap();
    finish(&store, &key("turn-b")).await;
    assert!(store.list_expired_leases(100).await.unwrap().is_empty());
}

pub async fn leases_concurrent_claims_have_exactly_one_winner(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = leased_turn(&store, "turn-1", "crashed", TINY_TTL).await;
    lapse().await;
    let claims: Vec<_> = (0..8)
        .map(|index| {
            let store = store.clone();
            let turn_key = turn_key.clone();
            tokio::spawn(async move {
                let owner = format!("claimer-{index}");
                (
                    owner.clone(),
                    store.claim_expired_lease(&turn_key, &owner, LONG_TTL).await,
                )
            })
        })
        .collect();
    let mut winners = Vec::new();
    for claim in claims {
        let (owner, result) = claim.await.expect("claim task");
        match result {
            Ok(lease) => {
                assert_eq!(lease.owner, owner);
                winners.push(lease);
            }
            Err(StoreError::LeaseHeldByOther { .. }) => {}
            Err(other) => panic!("{owner}: unexpected error {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one claimer wins: {winners:?}");
    assert_eq!(lease_of(&store, &turn_key).await, winners.pop());
}

pub async fn leases_terminal_turn_clears_lease_and_refuses_claims(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = leased_turn(&store, "turn-1", "executor-a", TINY_TTL).await;
    finish(&store, &turn_key).await;
    assert_eq!(
        lease_of(&store, &turn_key).await,
        None,
        "the end of the turn ends its lease"
    );
    lapse().await;
    let error = store
        .claim_expired_lease(&turn_key, "executor-b", LONG_TTL)
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::TurnNotRunning { .. }), "{error:?}");
    let error = store.renew_lease(&turn_key, "executor-a", LONG_TTL).await.unwrap_err();
    assert!(matches!(error, StoreError::TurnNotRunning { .. }), "{error:?}");
    assert_eq!(lease_of(&store, &turn_key).await, None);
    assert!(store.list_expired_leases(100).await.unwrap().is_empty());

    // Likewise after a freeze.
    let frozen_key = leased_turn(&store, "turn-2", "executor-a", LONG_TTL).await;
    let freeze = trueforge_store::session::FreezeTurn {
        reason: trueforge_protocol::CancellationReason::Abandoned,
        metrics: None,
        done: done_marker(),
    };
    let record = store.freeze_and_get_turn(&frozen_key, freeze).await.unwrap();
    assert_eq!(record.turn.lease, None);
    let error = store
        .claim_expired_lease(&frozen_key, "executor-b", LONG_TTL)
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::TurnNotRunning { .. }), "{error:?}");
}

pub async fn leases_ttl_must_be_positive(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    for ttl in [0, -1, i64::MIN] {
        let error = store
            .create_turn(leased(turn("turn-1", None), "executor-a", ttl))
            .await
            .unwrap_err();
        assert!(
            matches!(error, StoreError::InvalidInput(_)),
            "create with ttl {ttl}: {error:?}"
        );
    }
    assert!(
        store.get_turn(&key("turn-1")).await.unwrap().is_none(),
        "a rejected create writes nothing"
    );
    let turn_key = leased_turn(&store, "turn-1", "executor-a", LONG_TTL).await;
    let before = lease_of(&store, &turn_key).await;
    for ttl in [0, -1] {
        let error = store.renew_lease(&turn_key, "executor-a", ttl).await.unwrap_err();
        assert!(
            matches!(error, StoreError::InvalidInput(_)),
            "renew with ttl {ttl}: {error:?}"
        );
        let error = store
            .claim_expired_lease(&turn_key, "executor-b", ttl)
            .await
            .unwrap_err();
        assert!(
            matches!(error, StoreError::InvalidInput(_)),
            "claim with ttl {ttl}: {error:?}"
        );
    }
    assert_eq!(lease_of(&store, &turn_key).await, before);
}

pub async fn leases_missing_turn_is_not_found(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let error = store
        .renew_lease(&key("ghost"), "executor-a", LONG_TTL)
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::TurnNotFound { .. }), "{error:?}");
    let error = store
        .claim_expired_lease(&key("ghost"), "executor-a", LONG_TTL)
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::TurnNotFound { .. }), "{error:?}");
}

pub async fn leases_renew_racing_claim_never_both_win(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    for round in 0..6 {
        let turn_id = format!("turn-{round}");
        let turn_key = leased_turn(&store, &turn_id, "executor-a", TINY_TTL).await;
        lapse().await;
        let renew = {
            let store = store.clone();
            let turn_key = turn_key.clone();
            tokio::spawn(async move { store.renew_lease(&turn_key, "executor-a", LONG_TTL).await })
        };
        let claim = {
            let store = store.clone();
            let turn_key = turn_key.clone();
            tokio::spawn(async move { store.claim_expired_lease(&turn_key, "executor-b", LONG_TTL).await })
        };
        let (renewed, claimed) = (renew.await.unwrap(), claim.await.unwrap());
        let holder = lease_of(&store, &turn_key).await.unwrap();
        match (&renewed, &claimed) {
            (Ok(lease), Err(StoreError::LeaseHeldByOther { .. }))
            | (Err(StoreError::LeaseHeldByOther { .. }), Ok(lease)) => {
                assert_eq!(&holder, lease, "round {round}: the winner holds the lease");
            }
            other => panic!("round {round}: exactly one of renew and claim must win, got {other:?}"),
        }
        finish(&store, &turn_key).await;
    }
    let error = store.list_expired_leases(0).await.unwrap_err();
    assert!(matches!(error, StoreError::InvalidInput(_)), "{error:?}");
}

pub async fn leases_of_other_owners_expire_at_once(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let theirs = leased_turn(&store, "turn-theirs", "executor-old", LONG_TTL).await;
    let also_theirs = leased_turn(&store, "turn-also", "executor-older", LONG_TTL).await;
    let ours = leased_turn(&store, "turn-ours", "executor-new", LONG_TTL).await;
    let ended = leased_turn(&store, "turn-ended", "executor-old", LONG_TTL).await;
    finish(&store, &ended).await;
    assert!(store.list_expired_leases(10).await.unwrap().is_empty());

    assert_eq!(store.expire_leases_of_others("executor-new").await.unwrap(), 2);
    let mut expired: Vec<String> = store
        .list_expired_leases(10)
        .await
        .unwrap()
        .into_iter()
        .map(|lease| lease.turn_id.into_string())
        .collect();
    expired.sort();
    assert_eq!(expired, vec!["turn-also".to_owned(), "turn-theirs".to_owned()]);
    assert_eq!(lease_of(&store, &ours).await.unwrap().owner, "executor-new");
    assert_eq!(lease_of(&store, &ended).await, None);
    // Claimable at once, and only by one claimer.
    store
        .claim_expired_lease(&theirs, "executor-new", LONG_TTL)
        .await
        .unwrap();
    store
        .claim_expired_lease(&also_theirs, "executor-new", LONG_TTL)
        .await
        .unwrap();
    assert_eq!(store.expire_leases_of_others("executor-new").await.unwrap(), 0);
}

/// The fencing token: a takeover raises the lease's epoch; renewals keep it.
pub async fn leases_a_takeover_raises_the_epoch(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let created = store
        .create_turn(leased(turn("turn-1", None), "executor-a", TINY_TTL))
        .await
        .unwrap();
    let first = created.lease.unwrap().epoch;
    lapse().await;
    let claimed = store
        .claim_expired_lease(&key("turn-1"), "executor-b", TINY_TTL)
        .await
        .unwrap();
    assert_eq!(claimed.epoch, first + 1);
    let renewed = store.renew_lease(&key("turn-1"), "executor-b", LONG_TTL).await.unwrap();
    assert_eq!(renewed.epoch, claimed.epoch, "a renewal keeps the epoch");
    assert_eq!(lease_of(&store, &key("turn-1")).await.unwrap().epoch, claimed.epoch);
    // A turn that never had a lease gets epoch 1 when first claimed.
    finish(&store, &key("turn-1")).await;
    store.create_turn(turn("turn-2", Some("turn-1"))).await.unwrap();
    let claimed = store
        .claim_expired_lease(&key("turn-2"), "executor-c", LONG_TTL)
        .await
        .unwrap();
    assert_eq!(claimed.epoch, 1);
}

/// A writer that lost its lease (another executor took the turn over after it stalled) can write that turn
/// no more: every turn write through its fenced store is refused and changes nothing, while the new
/// owner's fenced store, and writes to other turns, go through.
pub async fn leases_a_stale_fencing_token_is_refused(store: Store) {
    use trueforge_store::session::{LiveStreamMark, ThreadStep};
    seed_session(&store, TENANT, SESSION).await;
    let created = store
        .create_turn(leased(turn("turn-1", None), "executor-a", TINY_TTL))
        .await
        .unwrap();
    let turn_key = key("turn-1");
    let stale = store.fenced(&turn_key, created.lease.unwrap().epoch);
    stale
        .append_events(&turn_key, vec![stored(1, model_message(&event_id(), "before"))])
        .await
        .expect("the holder writes while its lease stands");
    lapse().await;
    let claimed = store
        .claim_expired_lease(&turn_key, "executor-b", LONG_TTL)
        .await
        .unwrap();
    let current = store.fenced(&turn_key, claimed.epoch);

    let refused = |result: Result<(), StoreError>, what: &str| match result {
        Err(StoreError::StaleLease { epoch, current, .. }) => {
            assert_eq!((epoch, current), (claimed.epoch - 1, claimed.epoch), "{what}");
        }
        other => panic!("{what}: expected StaleLease, got {other:?}"),
    };
    refused(
        stale
            .append_events(&turn_key, vec![stored(2, model_message(&event_id(), "stale"))])
            .await,
        "append_events",
    );
    let step = ThreadStep {
        thread_id: "main".into(),
        events: vec![stored(2, model_message(&event_id(), "stale step"))],
        messages: vec![user("stale")],
        usage: None,
        completion: None,
        state_patch: None,
    };
    refused(stale.commit_thread_step(&turn_key, step).await, "commit_thread_step");
    refused(
        stale
            .mark_live_stream(
                &turn_key,
                LiveStreamMark {
                    seq: 9,
                    open_messages: Vec::new(),
                },
            )
            .await,
        "mark_live_stream",
    );
    refused(
        stale
            .update_turn_state(&turn_key, done_state(), done_marker())
            .await
            .map(|_| ()),
        "update_turn_state",
    );
    // Nothing of the stale writer's landed: the turn still runs, with only the event written in time.
    let record = store.get_turn(&turn_key).await.unwrap().unwrap();
    assert!(!record.turn.state.is_terminal(), "{:?}", record.turn.state);
    assert_eq!(record.turn.last_seq, 1);
    assert_eq!(record.snapshot.live_stream.seq, 0);
    assert_eq!(main_context(&store, &turn_key).await, Vec::<String>::new());

    // The new owner writes, ends the turn, and the events are its own.
    current
        .append_events(&turn_key, vec![stored(2, model_message(&event_id(), "resumed"))])
        .await
        .unwrap();
    current
        .update_turn_state(&turn_key, done_state(), done_marker())
        .await
        .unwrap();
    assert_eq!(event_types(&store, &turn_key).await.len(), 3);
    // A fenced store fences its own turn only.
    store.create_turn(turn("turn-2", Some("turn-1"))).await.unwrap();
    stale
        .append_events(
            &key("turn-2"),
            vec![stored(1, model_message(&event_id(), "other turn"))],
        )
        .await
        .expect("another turn is not fenced by this token");
}

contract_group!(
    leases_a_takeover_raises_the_epoch,
    leases_a_stale_fencing_token_is_refused,
    leases_of_other_owners_expire_at_once,
    leases_create_turn_records_the_lease,
    leases_renew_by_owner_extends,
    leases_renew_by_other_owner_is_rejected,
    leases_claim_of_live_lease_is_rejected,
    leases_claim_after_expiry_changes_owner,
    leases_claim_of_unleased_running_turn_succeeds,
    leases_list_expired_spans_tenants_and_skips_live_and_terminal,
    leases_concurrent_claims_have_exactly_one_winner,
    leases_terminal_turn_clears_lease_and_refuses_claims,
    leases_ttl_must_be_positive,
    leases_missing_turn_is_not_found,
    leases_renew_racing_claim_never_both_win,
);
