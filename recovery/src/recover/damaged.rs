//! `salvage_damaged_fields`: every value of a recovered row that is not in its table as
//! the record holds it (NULL there instead, or not written), with its reason and the value
//! as read, so that SQL tells a NULL that is damage from a NULL that was NULL.

use std::collections::BTreeSet;

use pager::TextEncoding;
use reconstruct::{DamageReason, FieldDamage};

use crate::base::output::{quote, Output, SqlValue};

/// One value of a row in the output: its table, the row's rowid, the column.
#[derive(Clone, Copy, Debug)]
pub struct Field<'a> {
    /// The table.
    pub table: &'a str,
    /// The row's rowid.
    pub rowid: i64,
    /// The column.
    pub column: &'a str,
}

/// The `salvage_damaged_fields` registry of a run, created on first use.
#[derive(Debug, Default)]
pub struct DamagedFields {
    /// Its name in the output, once created (`salvage_damaged_fields`, or a free variant).
    pub name: Option<String>,
    /// Values registered.
    pub fields: u64,
}

impl DamagedFields {
    /// Registers one value of a row already in the output, as it was read (`original`),
    /// before the run wrote another in its place.
    pub fn keep_read(
        &mut self,
        out: &Output,
        field: Field<'_>,
        reason: DamageReason,
        original: rusqlite::types::Value,
        taken: &BTreeSet<String>,
    ) -> rusqlite::Result<()> {
        let name = self.registry(out, taken)?;
        out.conn.execute(
            &format!(
                "INSERT INTO {}(tbl, rowid, col, reason, original) VALUES (?1, ?2, ?3, ?4, ?5)",
                quote(&name)
            ),
            rusqlite::params![
                field.table,
                field.rowid,
                field.column,
                reason.name(),
                original
            ],
        )?;
        self.fields += 1;
        Ok(())
    }

    /// The registry's name, the table created on first use.
    fn registry(&mut self, out: &Output, taken: &BTreeSet<String>) -> rusqlite::Result<String> {
        if let Some(name) = &self.name {
            return Ok(name.clone());
        }
        let name = out.registry_name("salvage_damaged_fields", taken);
        out.conn.execute_batch(&format!(
            "CREATE TABLE {}(tbl TEXT NOT NULL, rowid INTEGER, col TEXT, reason TEXT NOT NULL, original)",
            quote(&name)
        ))?;
        Ok(self.name.insert(name).clone())
    }

    /// Registers the damaged values of one row of `table` written under `rowid`. `taken`:
    /// the names the schema uses.
    pub fn keep(
        &mut self,
        out: &Output,
        enc: TextEncoding,
        table: &str,
        rowid: Option<i64>,
        damage: &[FieldDamage],
        taken: &BTreeSet<String>,
    ) -> rusqlite::Result<()> {
        if damage.is_empty() {
            return Ok(());
        }
        let name = self.registry(out, taken)?;
        let sql = format!(
            "INSERT INTO {}(tbl, rowid, col, reason, original) VALUES (?1, ?2, ?3, ?4, ?5)",
            quote(&name)
        );
        for d in damage {
            let original = SqlValue::from_value(&d.original, enc);
            out.conn.execute(
                &sql,
                rusqlite::params![table, rowid, d.column, d.reason.name(), original],
            )?;
            self.fields += 1;
        }
        Ok(())
    }
}
