//! The Kubernetes CEL library's `quantity()` for offline rule evaluation: a resource quantity
//! (`10Gi`, `500m`, `1e3`) parsed exactly as the API server reads one, compared with
//! `isGreaterThan`, `isLessThan` and `compareTo`.

use std::sync::Arc;

use cel::extractors::This;
use cel::objects::Opaque;
use cel::{ExecutionError, Value};

/// A quantity in billionths of its unit (`1n`), which holds every quantity a schema bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Quantity(i128);

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

/// Nanos per unit of each suffix.
fn suffix_nanos(suffix: &str) -> Option<i128> {
    const NANO: i128 = 1_000_000_000;
    let binary = |power: u32| NANO.checked_mul(1i128 << power);
    match suffix {
        "n" => Some(1),
        "u" => Some(1_000),
        "m" => Some(1_000_000),
        "" => Some(NANO),
        "k" => Some(NANO * 1_000),
        "M" => Some(NANO * 1_000_000),
        "G" => Some(NANO * 1_000_000_000),
        "T" => Some(NANO * 1_000_000_000_000),
        "P" => Some(NANO * 1_000_000_000_000_000),
        "E" => Some(NANO * 1_000_000_000_000_000_000),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ => None,
    }
}

impl Quantity {
    /// Parses `<sign><digits>[.<digits>]<suffix>`, the suffix binary (`Ki`…`Ei`), decimal
    /// (`n`…`E`) or an exponent (`e3`, `E-2`); below a nano rounds up, as the API server does.
    pub fn parse(text: &str) -> Option<Self> {
        let (negative, unsigned) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let number_end = unsigned
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(unsigned.len());
        let (number, suffix) = unsigned.split_at(number_end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
            return None;
        }
        let digits: i128 = format!("{whole}{fraction}").parse().ok()?;
        let mut scale = i32::try_from(fraction.len()).ok()?;
        let unit = match (suffix_nanos(suffix), suffix.strip_prefix(['e', 'E'])) {
            (Some(unit), _) => unit,
            (None, Some(exponent)) => {
                scale -= exponent.parse::<i32>().ok()?;
                suffix_nanos("")?
            }
            (None, None) => return None,
        };
        let mut nanos = digits.checked_mul(unit)?;
        while scale > 0 {
            // Round up what is finer than a nano, away from zero.
            nanos = nanos / 10 + i128::from(nanos % 10 != 0);
            scale -= 1;
        }
        while scale < 0 {
            nanos = nanos.checked_mul(10)?;
            scale += 1;
        }
        Some(Quantity(if negative { -nanos } else { nanos }))
    }
}

fn quantity_of(value: &Value) -> Result<Quantity, ExecutionError> {
    match value {
        Value::Opaque(opaque) => opaque
            .downcast_ref::<Quantity>()
            .copied()
            .ok_or_else(|| ExecutionError::function_error("quantity", "not a quantity")),
        _ => Err(ExecutionError::function_error("quantity", "not a quantity")),
    }
}

fn quantity(text: Arc<String>) -> Result<Value, ExecutionError> {
    Quantity::parse(&text)
        .map(|q| Value::Opaque(Arc::new(q)))
        .ok_or_else(|| {
            ExecutionError::function_error("quantity", format!("invalid quantity {text:?}"))
        })
}

fn is_greater_than(This(this): This<Value>, other: Value) -> Result<bool, ExecutionError> {
    Ok(quantity_of(&this)? > quantity_of(&other)?)
}

fn is_less_than(This(this): This<Value>, other: Value) -> Result<bool, ExecutionError> {
    Ok(quantity_of(&this)? < quantity_of(&other)?)
}

fn compare_to(This(this): This<Value>, other: Value) -> Result<i64, ExecutionError> {
    Ok(match quantity_of(&this)?.cmp(&quantity_of(&other)?) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    })
}

/// Adds `quantity()` and its comparisons to `context`.
pub fn add_to(context: &mut cel::Context<'_, '_>) {
    // The names are not the standard library's, so declaring them cannot conflict.
    let _ = context.add_function("quantity", quantity);
    let _ = context.add_function("isGreaterThan", is_greater_than);
    let _ = context.add_function("isLessThan", is_less_than);
    let _ = context.add_function("compareTo", compare_to);
}

#[cfg(test)]
mod tests {
    use super::Quantity;

    #[test]
    fn quantities_compare_as_the_api_server_reads_them() {
        let q = |s: &str| Quantity::parse(s).unwrap_or_else(|| panic!("{s}"));
        assert!(q("1Gi") > q("1G") && q("1G") > q("953Mi") && q("954Mi") > q("1G"));
        assert_eq!(q("1Ki"), q("1024"));
        assert_eq!(q("1.5k"), q("1500"));
        assert_eq!(q("1e3"), q("1k"));
        assert_eq!(q("1Ei"), q("1024Pi"));
        assert!(q("1E") > q("1P"));
        assert_eq!(q("500m"), q("0.5"));
        assert_eq!(q("0.1n"), q("1n"), "finer than a nano rounds up");
        assert!(q("0") < q("1n") && q("-1") < q("0"));
        for bad in ["", "Gi", "1.2.3", "1Qi", "1e", "--1", "."] {
            assert!(Quantity::parse(bad).is_none(), "{bad}");
        }
    }
}
