//! Near misses get did-you-mean suggestions, and the mistakes peer frameworks let through
//! (`../shared/notes/peer-check-time.md`: verl's `clip_ratio_hgh`, `adv_estimator=grpoo`,
//! `lr=abc`, `clip_ratio_high=-3`, TRL's `loss_type=grpoo`, batches that do not divide) are
//! each caught, with a message that says what to write instead.

use crate::common;

use common::{diags_with, help, only, rl};

#[test]
fn field_typo_grop_suggests_group() {
    assert_eq!(help(&only(&rl("grop = 5"), "E0301")), "did you mean `group`?");
}

#[test]
fn constructor_typo_grpoo_suggests_grpo() {
    let text = rl("").replace("grpo(policy", "grpoo(policy");
    let d = only(&text, "E0200");
    assert_eq!(help(&d), "did you mean `grpo`?");
    // The call's own arguments are still uses: no "unused" warnings for them.
    assert!(common::codes(&text).iter().all(|c| !c.starts_with('W')), "{:?}", common::codes(&text));
}

#[test]
fn enum_typos() {
    let d = only(&rl("").replace("history = action_only", "history = action_onyl"), "E0307");
    assert_eq!(help(&d), "did you mean `action_only`?");
    let d = only(
        "dataset d = jsonl(\"x.jsonl\") { kind = trajectory }\nstage s = sft(std::models::tiny, d)\n",
        "E0307",
    );
    assert_eq!(help(&d), "did you mean `trajectories`?");
}

#[test]
fn unit_typo_stepz_suggests_steps() {
    let d = only(&rl("").replace("horizon = 6 steps", "horizon = 6 stepz"), "E0103");
    assert!(help(&d).contains("`steps`"), "{}", help(&d));
}

#[test]
fn verl_clip_ratio_hgh_in_an_inherited_recipe_is_caught() {
    // verl: a recipe YAML inheriting ppo_trainer accepts `clip_ratio_hgh: 0.28` silently.
    let base = rl("clip = 0.2 .. 0.2");
    let child = "extends \"base.wrl\" {\n  online.clip_ratio_hgh = 0.28\n}\n";
    let all = diags_with("child.wrl", child, &[("base.wrl", &base)]);
    let d = all.iter().find(|d| d.code == "E0301").expect("E0301");
    assert!(
        help(d).contains("clip_ratio_high") && help(d).contains("clip = 0.2 .. 0.28"),
        "{all:#?}"
    );
}

#[test]
fn verl_field_names_are_translated() {
    let d = only(&rl("clip_ratio_hgh = 0.28"), "E0301");
    assert!(help(&d).contains("`clip_ratio_high`"), "{}", help(&d));
    let d = only(&rl("num_generations = 5"), "E0301");
    assert!(help(&d).contains("`group`"), "{}", help(&d));
}

#[test]
fn lr_abc_is_not_a_number() {
    let d = only(&rl("lr = abc"), "E0200");
    assert!(d.labels[0].message.contains("a number"), "{:#?}", d.labels);
}

#[test]
fn negative_clip_is_out_of_range() {
    let d = only(&rl("clip = -3"), "E0306");
    assert!(help(&d).contains("[0, 10]"), "{}", help(&d));
}

#[test]
fn trl_loss_type_grpoo_is_an_unknown_value() {
    let d = only(&rl("loss_agg = grpoo"), "E0307");
    assert!(d.labels[0].message.contains("token_mean"));
}

#[test]
fn rollout_n_five_is_not_a_number() {
    assert!(common::codes(&rl("group = five")).contains(&"E0200"));
}

#[test]
fn batch_that_does_not_divide_shows_nearest_values() {
    // verl: data.train_batch_size=47 with 8 GPUs; here prompts × group vs mini_batch.
    let d = only(&rl("prompts = 47, group = 5, level = trajectory, mini_batch = 24"), "E0403");
    assert!(help(&d).contains("or `prompts` to 24 or 48"), "{}", help(&d));
}
