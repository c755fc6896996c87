"""Label groups for the two-step intent program ``intent_route`` (group first, then the intent among its labels).

A benchmark whose data groups its labels says so (CLINC150's ``domains``: :attr:`label_groups`); for one whose data
does not (Banking77), the program brings its own grouping, here. ``BANKING77_GROUPS`` is this project's reading of
the 77 label names by the product area a support team would route a message to; every label is in exactly one group
(a test checks it against the dataset's label list).
"""

from __future__ import annotations

BANKING77_GROUPS: dict[str, list[str]] = {
    "card_delivery_and_activation": [
        "card_arrival", "card_delivery_estimate", "activate_my_card", "card_linking", "get_physical_card",
        "order_physical_card", "getting_spare_card", "card_about_to_expire", "supported_cards_and_currencies",
        "visa_or_mastercard", "country_support", "age_limit", "fiat_currency_support"],
    "card_problems_and_security": [
        "card_not_working", "contactless_not_working", "lost_or_stolen_card", "compromised_card", "card_swallowed",
        "pin_blocked", "change_pin", "passcode_forgotten", "lost_or_stolen_phone", "card_acceptance",
        "apple_pay_or_google_pay"],
    "virtual_cards": [
        "getting_virtual_card", "get_disposable_virtual_card", "virtual_card_not_working",
        "disposable_card_limits"],
    "card_payments": [
        "card_payment_fee_charged", "card_payment_not_recognised", "card_payment_wrong_exchange_rate",
        "declined_card_payment", "pending_card_payment", "reverted_card_payment?", "transaction_charged_twice",
        "extra_charge_on_statement", "direct_debit_payment_not_recognised", "request_refund",
        "Refund_not_showing_up"],
    "cash_and_atm": [
        "atm_support", "cash_withdrawal_charge", "cash_withdrawal_not_recognised", "declined_cash_withdrawal",
        "pending_cash_withdrawal", "wrong_amount_of_cash_received", "wrong_exchange_rate_for_cash_withdrawal"],
    "top_ups": [
        "automatic_top_up", "pending_top_up", "top_up_by_bank_transfer_charge", "top_up_by_card_charge",
        "top_up_by_cash_or_cheque", "top_up_failed", "top_up_limits", "top_up_reverted", "topping_up_by_card",
        "verify_top_up"],
    "transfers": [
        "beneficiary_not_allowed", "cancel_transfer", "declined_transfer", "failed_transfer", "pending_transfer",
        "receiving_money", "transfer_fee_charged", "transfer_into_account", "transfer_not_received_by_recipient",
        "transfer_timing", "balance_not_updated_after_bank_transfer",
        "balance_not_updated_after_cheque_or_cash_deposit"],
    "exchange_rates": ["exchange_rate", "exchange_charge", "exchange_via_app"],
    "account_and_identity": [
        "edit_personal_details", "terminate_account", "unable_to_verify_identity", "verify_my_identity",
        "verify_source_of_funds", "why_verify_identity"],
}

PROGRAM_GROUPS: dict[str, dict[str, list[str]]] = {"banking77": BANKING77_GROUPS}


def label_groups(benchmark) -> dict[str, list[str]]:
    """The groups ``intent_route`` uses on ``benchmark``: the data's own (``benchmark.label_groups``), else this
    module's grouping for the benchmark's id; a ValueError when neither exists or a label is missing."""
    groups = getattr(benchmark, "label_groups", None) or PROGRAM_GROUPS.get(getattr(benchmark, "id", ""))
    if not groups:
        raise ValueError(f"intent_route has no label groups for benchmark {getattr(benchmark, 'id', '?')!r}")
    grouped = [label for labels in groups.values() for label in labels]
    missing = [label for label in benchmark.labels if label not in grouped]
    if missing or len(grouped) != len(set(grouped)):
        raise ValueError(f"the label groups for {benchmark.id} must hold every label once; missing: {missing[:5]}")
    return groups
