//! The agents a test talks to in a lab: one started in each local endpoint (through the lab's
//! exec, so it runs in that endpoint's namespace and cgroups), a guest's own over its socket, or
//! the `vnetlab serve` on another machine, paired sender to receiver.

use std::net::{IpAddr, SocketAddr};

use super::error::Error;
use crate::engine::controller::{AgentConn, Pair};
use crate::lab::state::LabRecord;
use crate::vocab::{Role, Senders};

/// The agent of an endpoint on another machine: the `vnetlab serve` there.
fn remote_agent(
    rec: &LabRecord,
    role: Role,
    r: &crate::lab::topology::RemoteClient,
) -> Result<AgentConn, Error> {
    let token = r.token.as_deref().ok_or_else(|| {
        Error::Input(format!(
            "the {role} machine {} runs no `vnetlab serve` this lab knows of (no --token): make the lab with --token, or test it with --peer iperf3",
            r.address
        ))
    })?;
    let addr = SocketAddr::new(IpAddr::V4(r.address), r.port);
    // The client machine is reached through the lab's uplink, from the lab's host namespace.
    let host_ns = crate::lab::exec::netns_fd(rec.endpoint(Role::Host)?)?;
    Ok(AgentConn::tcp_from(
        &role.to_string(),
        addr,
        token,
        Some(host_ns),
    )?)
}

/// Starts an agent in each named endpoint (through the lab's exec) and pairs them.
pub fn lab_agents(
    rec: &LabRecord,
    from: Senders,
    to: Role,
) -> Result<(Vec<AgentConn>, Vec<Pair>), Error> {
    let to_ep = rec.endpoint(to)?;
    let froms: Vec<Role> = match from {
        Senders::AllGuests => rec.guests().map(|g| g.role).collect(),
        Senders::One(r) => {
            rec.endpoint(r)?;
            vec![r]
        }
    };
    if froms.contains(&to) {
        return Err(Error::Input(format!(
            "--from and --to both name {to}: pick two different endpoints"
        )));
    }
    let exe = std::env::current_exe().map_err(|e| Error::Failed(e.to_string()))?;
    let start = |role: Role| -> Result<AgentConn, Error> {
        let ep = rec.endpoint(role)?;
        if let Some(r) = &ep.remote {
            return remote_agent(rec, role, r);
        }
        if let Some(vm) = &ep.vm {
            return Ok(AgentConn::unix(&role.to_string(), &vm.files().agent())?);
        }
        let cmd = crate::lab::exec::command(ep, &[exe.display().to_string(), "agent".into()])?;
        Ok(AgentConn::spawn(&role.to_string(), cmd)?)
    };
    let mut agents = vec![start(to)?];
    let mut pairs = Vec::new();
    for (k, &f) in froms.iter().enumerate() {
        agents.push(start(f)?);
        let via_nat = f == Role::Client && to_ep.reach_from_client.is_some();
        let (connect_to, ports) = match (&to_ep.reach_from_client, via_nat) {
            (Some(r), true) => (IpAddr::V4(r.address), Some(r.ports)),
            _ => (IpAddr::V4(to_ep.address), None),
        };
        pairs.push(Pair {
            initiator: k + 1,
            server: 0,
            listen_on: IpAddr::V4(to_ep.address),
            connect_to,
            ports,
            from: f.to_string(),
            to: to.to_string(),
            reverse: false,
        });
    }
    Ok((agents, pairs))
}
