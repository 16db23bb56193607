//! TEMPORARY stand-in for `analyze::Engine` until it lands on main: keeps
//! every record and rebuilds the whole profile from an in-memory perf.data
//! on each call. Same API; deleted at the merge.

use std::io::Cursor;

use perfdata::{AttrEntry, BpfProgInfo, BtfBlob, Features, PerfFile, PerfFileWriter};

use crate::analyze::profile::ProgRecord;
use crate::analyze::{Profile, ProfileOptions};

pub struct Engine {
    attrs: Vec<AttrEntry>,
    opts: ProfileOptions,
    data: Vec<u8>,
    progs: Vec<ProgRecord>,
    profile: Option<Profile>,
}

impl Engine {
    pub fn live(attrs: Vec<AttrEntry>, opts: &ProfileOptions) -> Engine {
        Engine {
            attrs,
            opts: opts.clone(),
            data: Vec::new(),
            progs: Vec::new(),
            profile: None,
        }
    }

    pub fn add_program(&mut self, prog: ProgRecord) {
        self.progs.push(prog);
    }

    pub fn feed(&mut self, record: &[u8]) -> Result<(), perfdata::Error> {
        self.data.extend_from_slice(record);
        Ok(())
    }

    pub fn profile(&mut self) -> &Profile {
        let mut w = PerfFileWriter::new(Cursor::new(Vec::new()), &self.attrs).unwrap();
        w.write_raw(&self.data).unwrap();
        let infos: Vec<BpfProgInfo> = self.progs.iter().filter_map(|p| p.info.clone()).collect();
        let btf: Vec<BtfBlob> = self
            .progs
            .iter()
            .filter_map(|p| {
                Some(BtfBlob {
                    id: p.info.as_ref()?.btf_id,
                    data: p.btf.clone()?,
                })
            })
            .collect();
        let f = Features {
            bpf_prog_info: Some(infos),
            bpf_btf: Some(btf),
            bpf_prog_meta: self.progs.iter().filter_map(|p| p.meta.clone()).collect(),
            ..Default::default()
        };
        let bytes = w.finish(&f).unwrap().into_inner();
        let file = PerfFile::from_bytes(bytes).unwrap();
        self.profile = Some(Profile::build(&file, &self.opts).unwrap());
        self.profile.as_ref().unwrap()
    }
}
