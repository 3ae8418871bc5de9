//! The orders of the `/resume` picker's sessions: newest first, or pi's
//! threaded order (a fork under the session it came from).

use std::time::SystemTime;

use makai_coding::session::SessionInfo;

/// Indexes of `sessions`, newest first, none indented.
pub(super) fn newest_first(sessions: &[SessionInfo]) -> Vec<(usize, usize)> {
    let mut order: Vec<usize> = (0..sessions.len()).collect();
    order.sort_by(|&a, &b| sessions[b].modified.cmp(&sessions[a].modified));
    order.into_iter().map(|i| (i, 0)).collect()
}

/// pi's threaded order: each session under the one it was forked from (its
/// header's `parentSession`: the parent's file, or its database location
/// ending in its id), with its depth; trees and siblings by the latest
/// activity anywhere in them, newest first.
pub(super) fn threaded(sessions: &[SessionInfo]) -> Vec<(usize, usize)> {
    let parent_of = |s: &SessionInfo| -> Option<usize> {
        let parent = s.parent_session.as_deref()?;
        sessions.iter().position(|p| {
            p.id != s.id
                && (p
                    .path
                    .as_ref()
                    .is_some_and(|path| path.as_os_str() == parent)
                    || parent == p.id
                    || parent.ends_with(&format!("#{}", p.id)))
        })
    };
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); sessions.len()];
    let mut roots = Vec::new();
    for (i, s) in sessions.iter().enumerate() {
        match parent_of(s) {
            Some(p) => children[p].push(i),
            None => roots.push(i),
        }
    }
    // A cycle of parents (damaged headers) leaves its members rootless:
    // they are listed as roots.
    let mut reached = vec![false; sessions.len()];
    let mut latest: Vec<SystemTime> = sessions.iter().map(|s| s.modified).collect();
    fn settle(
        i: usize,
        children: &[Vec<usize>],
        latest: &mut [SystemTime],
        reached: &mut [bool],
    ) -> SystemTime {
        if std::mem::replace(&mut reached[i], true) {
            return latest[i];
        }
        for &c in &children[i] {
            let t = settle(c, children, latest, reached);
            latest[i] = latest[i].max(t);
        }
        latest[i]
    }
    for &r in &roots {
        settle(r, &children, &mut latest, &mut reached);
    }
    for i in 0..sessions.len() {
        if !reached[i] {
            roots.push(i);
            settle(i, &children, &mut latest, &mut reached);
        }
    }
    let by_latest = |list: &mut Vec<usize>| list.sort_by(|&a, &b| latest[b].cmp(&latest[a]));
    by_latest(&mut roots);
    for list in &mut children {
        by_latest(list);
    }
    let mut out = Vec::with_capacity(sessions.len());
    let mut listed = vec![false; sessions.len()];
    let mut stack: Vec<(usize, usize)> = roots.iter().rev().map(|&r| (r, 0)).collect();
    while let Some((i, depth)) = stack.pop() {
        if std::mem::replace(&mut listed[i], true) {
            continue;
        }
        out.push((i, depth));
        for &c in children[i].iter().rev() {
            stack.push((c, depth + 1));
        }
    }
    out
}
